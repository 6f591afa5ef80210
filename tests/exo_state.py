"""exo's `GET /state` and `GET /node_id`, built the way exo serialises them, for the
reader's unit tests, the lab test's stand-in exo server and the screenshots.

No sample of real exo output was found; these follow exo's pydantic models at commit
b5375f8cee4368d09e1ce96a56b9f81fb0bc81aa (github exo-explore/exo, June 2026):

- `src/exo/shared/types/state.py` `State`: `alias_generator=to_camel`, so keys are
  camelCase (`nodeIdentities`, `lastEventAppliedIdx`…); FastAPI returns it by alias.
- `src/exo/utils/pydantic_ext.py` `TaggedModel`: an instance, a shard, a runner status
  serialises as `{"ClassName": {fields}}`.
- `src/exo/shared/types/worker/instances.py`: `MlxRingInstance` (`instanceId`,
  `shardAssignments`, `hostsByNode: {node: [{ip, port}]}`, `ephemeralPort`),
  `MlxJacclInstance` (`jacclDevices: [[str|null]]`, `jacclCoordinators: {node: "ip:port"}`).
- `src/exo/shared/types/worker/runners.py` `ShardAssignments` (`modelId`,
  `runnerToShard`, `nodeToRunner`); `worker/shards.py` `PipelineShardMetadata` /
  `TensorShardMetadata` (`modelCard`, `deviceRank`, `worldSize`, `startLayer`…).
- `src/exo/master/placement_utils.py` `get_mlx_ring_hosts_by_node`: own slot
  `0.0.0.0:port`, ring neighbours' slots their IP, other slots `198.51.100.1:0`;
  `get_mlx_jaccl_coordinators`: the coordinator's own entry `0.0.0.0:port`;
  `_build_rdma_matrix`-style device matrix: `[i][j]` is node i's RDMA interface to node j.
- `src/exo/shared/types/profiling.py`: `NodeIdentity` (`friendlyName`…),
  `NodeNetworkInfo` (`interfaces: [{name, ipAddress, interfaceType}]`),
  `NodeRdmaCtlStatus` (`enabled`).
- `src/exo/shared/topology.py` `TopologySnapshot` (`nodes`, `connections`: plain
  BaseModel, no aliases), `shared/types/topology.py` `SocketConnection`
  (`sinkMultiaddr`: `shared/types/multiaddr.py` `Multiaddr`, a plain BaseModel whose
  computed fields serialise too: `{address, address_type, ip_address, port}`; the port is
  exo's API port, 52415, `worker/main.py` `_poll_connection_updates`) and `RDMAConnection`
  (`sourceRdmaIface`, `sinkRdmaIface`: `shared/apply.py` `MacThunderboltConnections`
  joins two nodes' `nodeThunderbolt` entries by domain UUID).
- `src/exo/shared/types/thunderbolt.py` `ThunderboltIdentifier` (`nodeThunderbolt`:
  `{node: {interfaces: [{rdmaInterface, domainUuid, linkSpeed}]}}`, one per host
  receptacle: `rdma_` + the device of hardware port "Thunderbolt N", and the receptacle's
  `current_speed_key`, "80 Gb/s" cabled, "Up to 120 Gb/s" not); `shared/types/profiling.py`
  `ThunderboltBridgeStatus` (`enabled`, `exists`, `serviceName`); `shared/topology.py`
  `get_thunderbolt_bridge_cycles` (`thunderboltBridgeCycles`).
- `src/exo/routing/router.py` `get_node_zid`: a node id is `os.urandom(16).hex()` with its
  leading zeros stripped (up to 32 hex digits; exo before June 2026 used libp2p peer ids).
- `src/exo/api/main.py`: `/node_id` returns the node id (a JSON string), `/state` the State.

`tests/fixtures/exo/check_with_exo.py` builds the same documents with exo's own models
and functions (run where exo's source imports) and says where they differ.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

EXO_COMMIT = "b5375f8cee4368d09e1ce96a56b9f81fb0bc81aa"
MODEL_70B = "mlx-community/Llama-3.3-70B-Instruct-4bit"
MODEL_8B = "mlx-community/Meta-Llama-3.1-8B-Instruct-4bit"
#: exo's API port: the port of every topology edge's sinkMultiaddr
API_PORT = 52415


SAMPLING = ("temperature", "topP", "topK", "minP", "repetitionPenalty", "presencePenalty",
            "frequencyPenalty")


def model_card(model_id: str, n_layers: int = 80) -> dict[str, Any]:
    return {
        "modelId": model_id, "storageSize": {"inBytes": 39_710_000_000},
        "nLayers": n_layers, "hiddenSize": 8192, "supportsTensor": True,
        "numKeyValueHeads": 8, "tasks": ["TextGeneration"], "components": None,
        "family": "llama", "quantization": "4bit", "baseModel": "Llama 3.3 70B",
        "capabilities": ["text"], "backends": ["MlxMetal"], "reasoningDialect": "none",
        "contextLength": 131072, "usesCfg": False, "trustRemoteCode": True,
        "isCustom": False, "vision": None,
        # shared/models/model_cards.py SamplingDefaults: every field dumps, None or not
        "samplingDefaults": {**dict.fromkeys(SAMPLING), "thinking": None,
                             "nonThinking": None},
    }


def shard_assignments(model_id: str, nodes: list[str], tag: str = "PipelineShardMetadata",
                      n_layers: int = 80) -> dict[str, Any]:
    per = n_layers // len(nodes)
    # a RunnerId is a uuid4 in exo (shared/types/common.py Id); here one made from the
    # node and model, so that the fixtures build the same every time
    runners = {n: str(uuid.uuid5(uuid.NAMESPACE_URL, f"{n}/{model_id}")) for n in nodes}
    return {
        "modelId": model_id,
        "runnerToShard": {
            runners[n]: {tag: {
                "modelCard": model_card(model_id, n_layers), "deviceRank": rank,
                "worldSize": len(nodes), "immediateException": False, "shouldTimeout": None,
                "startLayer": rank * per,
                "endLayer": n_layers if rank == len(nodes) - 1 else (rank + 1) * per,
                "nLayers": n_layers}}
            for rank, n in enumerate(nodes)
        },
        "nodeToRunner": runners,
    }


def ring_instance(instance_id: str, model_id: str, ring: list[tuple[str, str]],
                  port: int = 50123) -> dict[str, Any]:
    """`ring`: [(node id, the IP its ring neighbours connect to)] in ring order; as
    placement_utils.get_mlx_ring_hosts_by_node builds hostsByNode."""
    n = len(ring)
    hosts_by_node = {}
    for rank, (node, _) in enumerate(ring):
        hosts = []
        for idx, (_, ip) in enumerate(ring):
            if idx == rank:
                hosts.append({"ip": "0.0.0.0", "port": port})
            elif idx in ((rank - 1) % n, (rank + 1) % n):
                hosts.append({"ip": ip, "port": port})
            else:
                hosts.append({"ip": "198.51.100.1", "port": 0})
        hosts_by_node[node] = hosts
    return {"MlxRingInstance": {
        "instanceId": instance_id,
        "shardAssignments": shard_assignments(model_id, [node for node, _ in ring]),
        "hostsByNode": hosts_by_node,
        "ephemeralPort": port,
    }}


def jaccl_instance(instance_id: str, model_id: str, nodes: list[str],
                   devices: list[list[str | None]], coordinator_ip: str,
                   port: int = 50200) -> dict[str, Any]:
    return {"MlxJacclInstance": {
        "instanceId": instance_id,
        "shardAssignments": shard_assignments(model_id, nodes, "TensorShardMetadata"),
        "jacclDevices": devices,
        "jacclCoordinators": {n: f"{'0.0.0.0' if i == 0 else coordinator_ip}:{port}"
                              for i, n in enumerate(nodes)},
    }}


def multiaddr(ip: str, port: int = API_PORT) -> dict[str, Any]:
    """A `Multiaddr` as pydantic dumps it: its computed fields too."""
    v4 = "." in ip
    return {"address": f"/{'ip4' if v4 else 'ip6'}/{ip}/tcp/{port}",
            "address_type": "ip4" if v4 else "ip6", "ip_address": ip, "port": port}


def tb_ident(device: str, domain_uuid: str, link_speed: str) -> dict[str, str]:
    """One `nodeThunderbolt` interface: a host receptacle whose hardware port's device is
    `device` (exo: `rdma_` + that device) and its `current_speed_key`."""
    return {"rdmaInterface": f"rdma_{device}", "domainUuid": domain_uuid,
            "linkSpeed": link_speed}


def state(instances: dict[str, Any], nodes: dict[str, dict[str, Any]],
          rdma_edges: dict[tuple[str, str], tuple[str, str]] | None = None,
          cycles: list[list[str]] | None = None) -> dict[str, Any]:
    """A whole State. `nodes`: node id -> {"name", "interfaces": [(name, ip, type)],
    "rdma": bool | None, and optionally "thunderbolt": [tb_ident(...)], "tb_bridge":
    {"enabled", "exists", "serviceName"}}. A socket edge from every node to every address
    of every other node (`utils/info_gatherer/net_profile.py` `check_reachable` asks each
    one's /node_id), but loopback (there the asking node's own exo answers, not the
    expected one); `rdma_edges`: (source, sink) -> (source's rdma interface, sink's),
    after the pair's socket edges."""
    conns: dict[str, dict[str, list]] = {}
    for a in nodes:
        for b, info in nodes.items():
            if a == b:
                continue
            edges: list[dict[str, Any]] = [
                {"sinkMultiaddr": multiaddr(ip)} for _, ip, _ in info["interfaces"]
                if not ip.startswith("127.")]
            if (a, b) in (rdma_edges or {}):
                src, sink = rdma_edges[(a, b)]  # type: ignore[index]
                edges.append({"sourceRdmaIface": src, "sinkRdmaIface": sink})
            conns.setdefault(a, {})[b] = edges
    return {
        "instances": instances,
        "runners": {},
        "downloads": {},
        "tasks": {},
        "lastSeen": {n: "2026-06-22T13:40:00Z" for n in nodes},
        "topology": {"nodes": list(nodes), "connections": conns},
        "lastEventAppliedIdx": 412,
        "nodeIdentities": {n: {"modelId": i.get("model", "Mac16,9"),
                               "chipId": i.get("chip", "Apple M4 Max"),
                               "friendlyName": i["name"], "osVersion": "26.2",
                               "osBuildVersion": "25C56"} for n, i in nodes.items()},
        "nodeMemory": {},
        "nodeDisk": {},
        "nodeSystem": {},
        "nodeNetwork": {n: {"interfaces": [{"name": nm, "ipAddress": ip, "interfaceType": t}
                                           for nm, ip, t in i["interfaces"]]}
                        for n, i in nodes.items()},
        "nodeThunderbolt": {n: {"interfaces": i["thunderbolt"]} for n, i in nodes.items()
                            if "thunderbolt" in i},
        "nodeThunderboltBridge": {n: i["tb_bridge"] for n, i in nodes.items()
                                  if "tb_bridge" in i},
        "nodeRdmaCtl": {n: {"enabled": i["rdma"]} for n, i in nodes.items()
                        if i.get("rdma") is not None},
        "nodeBackends": {n: ["MlxMetal"] for n in nodes},
        "thunderboltBridgeCycles": cycles or [],
        "instanceLinks": {},
        "prefillServerPorts": {},
        "customModelCards": {},
    }


def dumps(obj: Any) -> bytes:
    return json.dumps(obj, indent=1, sort_keys=False).encode()
