"""Processor blocks: one per edge type and node type, each checked against a dense oracle."""

import pytest
import torch

from contactkit.errors import InvalidInputError
from contactkit.model import ActionMode
from contactkit.models.gnn.graph import EdgeType, GraphConfig, ModelVariant, NodeType, edge_types, node_types
from contactkit.models.gnn.model import (
    EdgeBlock,
    FaceBlock,
    ModelConfig,
    NodeBlock,
    ProcessorLayer,
    incoming_edges,
)

L = 4
TOL = {"atol": 1e-6, "rtol": 1e-5}


def config(variant=ModelVariant.ACT_FIGNET) -> ModelConfig:
    return ModelConfig(GraphConfig(variant, 3, 0.01, ActionMode.WRENCH), latent_dim=L, hidden_dim=6, mlp_layers=1,
                       message_passing_steps=1)


@pytest.mark.parametrize("variant", list(ModelVariant))
def test_one_block_per_edge_and_node_type(variant):
    layer = ProcessorLayer(config(variant))
    assert [b.edge_type for b in layer.edge.values()] == list(edge_types(variant))
    assert list(layer.edge) == [t.value for t in edge_types(variant)]
    assert [b.node_type for b in layer.node.values()] == list(node_types(variant))
    for block in layer.node.values():
        assert all(t.receiver is block.node_type for t in block.incoming)
    has_world = variant is ModelVariant.ACT_FIGNET
    assert (EdgeType.WORLD_MESH in edge_types(variant)) == has_world == (NodeType.WORLD in node_types(variant))


def test_mesh_nodes_read_their_sums_in_the_checkpoint_order():
    """The mesh MLP's input blocks are [mesh, object→mesh, face, world→mesh] (weights of earlier checkpoints)."""
    act, plus = incoming_edges(ModelVariant.ACT_FIGNET), incoming_edges(ModelVariant.FIGNET_PLUS)
    assert act[NodeType.MESH] == (EdgeType.OBJECT_MESH, EdgeType.FACE, EdgeType.WORLD_MESH)
    assert plus[NodeType.MESH] == (EdgeType.OBJECT_MESH, EdgeType.FACE)
    assert act[NodeType.OBJECT] == (EdgeType.MESH_OBJECT,) and act[NodeType.WORLD] == (EdgeType.MESH_WORLD,)


def test_edge_block_matches_dense_oracle():
    g = torch.Generator().manual_seed(0)
    block = EdgeBlock(EdgeType.OBJECT_MESH, config())
    edge, sender, receiver = (torch.randn(n, L, generator=g) for n in (7, 3, 5))
    index = torch.stack([torch.randint(0, 3, (7,), generator=g), torch.randint(0, 5, (7,), generator=g)])
    new, sums = block(edge, sender, receiver, index)
    rows = [block.mlp(torch.cat([edge[k], sender[index[0, k]], receiver[index[1, k]]])) for k in range(7)]
    torch.testing.assert_close(new, torch.stack(rows), **TOL)
    incidence = torch.zeros(5, 7)
    incidence[index[1], torch.arange(7)] = 1.0
    torch.testing.assert_close(sums, incidence @ new, **TOL)


def test_face_block_sends_message_i_to_receiver_i():
    g = torch.Generator().manual_seed(1)
    block = FaceBlock(config())
    face, mesh = torch.randn(4, 3 * L, generator=g), torch.randn(6, L, generator=g)
    senders, receivers = torch.randint(0, 6, (4, 3), generator=g), torch.randint(0, 6, (4, 3), generator=g)
    new, sums = block(face, mesh, senders, receivers)
    expected = torch.zeros(6, L)
    for k in range(4):
        row = block.mlp(torch.cat([face[k], *mesh[senders[k]], *mesh[receivers[k]]]))
        torch.testing.assert_close(new[k], row, **TOL)
        for i in range(3):
            expected[receivers[k, i]] += row[i * L : (i + 1) * L]
    torch.testing.assert_close(sums, expected, **TOL)


def test_node_block_concatenates_node_then_incoming_sums():
    g = torch.Generator().manual_seed(2)
    incoming = (EdgeType.OBJECT_MESH, EdgeType.FACE)
    block = NodeBlock(NodeType.MESH, incoming, config())
    node = torch.randn(5, L, generator=g)
    sums = {t: torch.randn(5, L, generator=g) for t in incoming}
    expected = block.mlp(torch.cat([node, sums[EdgeType.OBJECT_MESH], sums[EdgeType.FACE]], -1))
    torch.testing.assert_close(block(node, sums), expected, **TOL)


def test_face_edges_have_their_own_block():
    with pytest.raises(InvalidInputError, match="FaceBlock"):
        EdgeBlock(EdgeType.FACE, config())
