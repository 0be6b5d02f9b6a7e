"""The packed decode batch's cache layers keep spare columns: a decode step writes its key and
value columns into the buffer in place (no copy of the cache per step) until it is full, a
trimmed or re-indexed layer gets a fresh buffer, and what the layer holds is always exactly the
columns written (`test_hf_batching.py` checks the greedy tokens against decoding alone)."""

from __future__ import annotations

import shutil
import tempfile
import unittest

import torch

from agentmath_engine.decode_attention import DecodeGroup, attended_columns, plan_groups
from agentmath_engine.hf_backend import HuggingFaceBackend, transformers_available
from agentmath_engine.hf_fixtures import make_models
from agentmath_engine.packed_batch import SPARE_COLUMNS, _append


class PlanGroupsTest(unittest.TestCase):
    def test_groups_balance_the_padding_they_read_against_their_count(self) -> None:
        width = 120
        # One group reads 5 × 100 cells; splitting off the two short rows saves 180 for one more group.
        groups = plan_groups([100, 100, 90, 10, 10], width, group_cost=50)
        self.assertEqual(groups, [DecodeGroup(0, 3, 20, True), DecodeGroup(3, 5, 110, False)])
        self.assertEqual(plan_groups([100, 100, 90, 10, 10], width, group_cost=1000), [DecodeGroup(0, 5, 20, True)])
        self.assertEqual(plan_groups([7, 7, 7], 7, group_cost=0), [DecodeGroup(0, 3, 0, False)])

    def test_the_attended_columns_are_each_rows_last_columns(self) -> None:
        attended = attended_columns([3, 1], 4, torch.device("cpu"))
        self.assertEqual(attended.shape, (2, 1, 1, 4))
        self.assertEqual(attended[:, 0, 0].tolist(), [[False, True, True, True], [False, False, False, True]])


class AppendTest(unittest.TestCase):
    def test_writes_in_place_while_the_columns_fit_and_copies_once_when_full(self) -> None:
        held = torch.randn(2, 3, 5, 4)
        expected = held.clone()
        view, buffer = _append(held, None, torch.randn(2, 3, 1, 4))
        self.assertEqual(buffer.shape[2], 6 + SPARE_COLUMNS)
        pointer = buffer.data_ptr()
        for _ in range(SPARE_COLUMNS):
            column = torch.randn(2, 3, 1, 4)
            expected = torch.cat([expected, view[:, :, -1:]], dim=2)
            view, buffer = _append(view, buffer, column)
            self.assertEqual(buffer.data_ptr(), pointer)
        self.assertEqual(view.shape[2], 6 + SPARE_COLUMNS)
        # Full: the next column goes into a new, wider buffer with everything before it.
        before = view.clone()
        view, buffer = _append(view, buffer, torch.ones(2, 3, 1, 4))
        self.assertNotEqual(buffer.data_ptr(), pointer)
        self.assertTrue(torch.equal(view[:, :, :-1], before))
        self.assertTrue(torch.equal(view[:, :, -1:], torch.ones(2, 3, 1, 4)))

    def test_a_tensor_that_is_not_the_buffers_leading_view_gets_a_new_buffer(self) -> None:
        view, buffer = _append(torch.randn(3, 2, 4, 8), None, torch.randn(3, 2, 1, 8))
        trimmed = view[:, :, 2:]  # the batch dropped two columns of padding
        kept = trimmed.clone()
        again, fresh = _append(trimmed, buffer, torch.zeros(3, 2, 1, 8))
        self.assertNotEqual(fresh.data_ptr(), buffer.data_ptr())
        self.assertTrue(torch.equal(again[:, :, :-1], kept))
        rows = view.index_select(0, torch.tensor([0, 2]))  # a row left the batch
        again, fresh = _append(rows, buffer, torch.zeros(2, 2, 1, 8))
        self.assertEqual(again.shape, (2, 2, 6, 8))


@unittest.skipUnless(transformers_available(), "transformers is not installed")
class PackedCacheTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        cls.folder = tempfile.mkdtemp(prefix="agentmath-packed-batch-")
        cls.model = make_models(cls.folder, architectures=("llama",))["llama-1"]

    @classmethod
    def tearDownClass(cls) -> None:
        shutil.rmtree(cls.folder, ignore_errors=True)

    def test_decode_steps_write_into_the_same_buffer(self) -> None:
        backend = HuggingFaceBackend.create(self.model, 4, "cpu")
        backend.prefill(0, [5, 7, 9, 11])
        backend.prefill(1, [3, 4])
        tokens = torch.tensor([12, 13, 0, 0])
        positions = torch.tensor([4, 2, 0, 0])
        active = torch.tensor([True, True, False, False])
        backend.decode_step(tokens, positions, active)
        layer = backend._batch.cache.layers[0]
        pointers = []
        for _ in range(3):
            positions += 1
            backend.decode_step(tokens, positions, active)
            pointers.append(layer.keys.data_ptr())
        self.assertEqual(len(set(pointers)), 1)
        self.assertEqual(layer.keys.shape[2], 4 + 4)  # the widest row's 4 columns + 4 steps


if __name__ == "__main__":
    unittest.main()
