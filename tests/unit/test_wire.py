"""The wire format is defined once (core/schema.py): what a node builds is what peers
parse, field for field."""

from __future__ import annotations

import asyncio
import json

import pytest

from exotray.core import schema


def test_builder_refuses_a_record_that_is_not_the_schema():
    link = dict.fromkeys(schema.WIRE_FIELDS["link"])
    assert schema.on_wire("link", link) is link
    with pytest.raises(ValueError, match="missing"):
        schema.on_wire("link", {k: v for k, v in link.items() if k != "rtt_ms"})
    with pytest.raises(ValueError, match="not in the schema"):
        schema.on_wire("link", {**link, "rtt_new_ms": 1.0})


def test_wire_fields_are_the_models_fields():
    assert "schema" in schema.WIRE_FIELDS["snapshot"]  # the alias, not schema_
    assert schema.WIRE_FIELDS["link"] == set(schema.Link.__struct_fields__)
    assert schema.WIRE_FIELDS["interface"] == set(schema.Interface.__struct_fields__)
    assert not schema.LOCAL_SNAPSHOT_FIELDS & schema.wire_names(schema.Snapshot)


def test_a_built_snapshot_round_trips_through_the_parser(tmp_path):
    from exotray.agent.hw.sampler import NicInfo
    from exotray.agent.peers.discovery import PeerRecord
    from exotray.agent.runtime import Agent
    from exotray.core.settings import Settings

    async def build() -> dict:
        agent = Agent(Settings(name="me", mdns=False, state_dir=str(tmp_path)))
        agent.table.on_link_added = lambda link: None  # no route lookup (a socket)
        nics = {"eth0": NicInfo("eth0", True, 1000, ("10.213.0.1",), (("10.213.0.1", 24),),
                                multicast=True)}
        agent.monitor.update(nics, 0.0)
        agent.table.mdns_found(PeerRecord("b._exotray._tcp.local.", "bbbbbbbbbbbb", "b",
                                          "0.1.0", 1, 52480, ("10.213.0.2",)))
        link = next(iter(agent.links.values()))
        link.local_interface = "eth0"
        agent.prober.on_reply(link.target, agent.clock(), 0.4)
        return agent.snapshot()

    snap = asyncio.run(build())
    assert len(snap["links"]) == 1 and len(snap["interfaces"]) == 1
    parsed = schema.dump(schema.parse_snapshot(json.dumps(snap).encode()))
    local = {k: v for k, v in snap.items() if k not in schema.LOCAL_SNAPSHOT_FIELDS}
    assert parsed == local
