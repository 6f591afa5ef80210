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
  (`sinkMultiaddr: {address, address_type}`), `RDMAConnection`.
- `src/exo/api/main.py`: `/node_id` returns the node id (a JSON string), `/state` the State.
"""

from __future__ import annotations

import json
from typing import Any

EXO_COMMIT = "b5375f8cee4368d09e1ce96a56b9f81fb0bc81aa"
MODEL_70B = "mlx-community/Llama-3.3-70B-Instruct-4bit"
MODEL_8B = "mlx-community/Meta-Llama-3.1-8B-Instruct-4bit"


def model_card(model_id: str, n_layers: int = 80) -> dict[str, Any]:
    return {
        "modelId": model_id, "storageSize": {"inBytes": 39_710_000_000},
        "nLayers": n_layers, "hiddenSize": 8192, "supportsTensor": True,
        "numKeyValueHeads": 8, "tasks": ["TextGeneration"], "components": None,
        "family": "llama", "quantization": "4bit", "baseModel": "Llama 3.3 70B",
        "capabilities": ["text"], "backends": ["MlxMetal"], "reasoningDialect": "none",
        "contextLength": 131072, "usesCfg": False, "trustRemoteCode": True,
        "isCustom": False, "vision": None, "samplingDefaults": {},
    }


def shard_assignments(model_id: str, nodes: list[str], tag: str = "PipelineShardMetadata",
                      n_layers: int = 80) -> dict[str, Any]:
    per = n_layers // len(nodes)
    runners = {n: f"runner-{n[:8]}-{model_id[-4:]}" for n in nodes}
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


def state(instances: dict[str, Any], nodes: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """A whole State. `nodes`: node id -> {"name", "interfaces": [(name, ip, type)],
    "rdma": bool | None}."""
    conns: dict[str, dict[str, list]] = {}
    for a in nodes:
        for b, info in nodes.items():
            if a != b:
                conns.setdefault(a, {})[b] = [
                    {"sinkMultiaddr": {"address": f"/ip4/{ip}/tcp/52414",
                                       "address_type": "ip4"}}
                    for _, ip, _ in info["interfaces"]]
    return {
        "instances": instances,
        "runners": {},
        "downloads": {},
        "tasks": {},
        "lastSeen": {n: "2026-06-22T13:40:00.000000Z" for n in nodes},
        "topology": {"nodes": list(nodes), "connections": conns},
        "lastEventAppliedIdx": 412,
        "nodeIdentities": {n: {"modelId": "Mac16,9", "chipId": "Apple M4 Max",
                               "friendlyName": i["name"], "osVersion": "26.2",
                               "osBuildVersion": "25C56"} for n, i in nodes.items()},
        "nodeMemory": {},
        "nodeDisk": {},
        "nodeSystem": {},
        "nodeNetwork": {n: {"interfaces": [{"name": nm, "ipAddress": ip, "interfaceType": t}
                                           for nm, ip, t in i["interfaces"]]}
                        for n, i in nodes.items()},
        "nodeThunderbolt": {},
        "nodeThunderboltBridge": {},
        "nodeRdmaCtl": {n: {"enabled": i["rdma"]} for n, i in nodes.items()
                        if i.get("rdma") is not None},
        "nodeBackends": {n: ["MlxMetal"] for n in nodes},
        "thunderboltBridgeCycles": [],
        "instanceLinks": {},
        "prefillServerPorts": {},
        "customModelCards": {},
    }


def dumps(obj: Any) -> bytes:
    return json.dumps(obj, indent=1, sort_keys=False).encode()
