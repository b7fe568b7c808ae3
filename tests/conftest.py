"""Sampled by default, exhaustive on request.

The default run (``-m 'not slow'``, set in pyproject.toml) must stay under 12 CPU-minutes
(user + system time of the README's test command). Table-driven tests over many (op, dtype,
shape, configuration) rows cost more than that budget allows; for each of them, ``SAMPLED``
keeps about one row in ``k`` in the default run (every k-th row in parametrize order, plus
the first row naming each op family and dtype family, so the same rows run every time and
on every machine, and every family keeps rows) and marks the others ``slow``.
``pytest -m slow`` runs the rows left out, ``pytest -m ''`` runs everything.

Hypothesis is reproducible by default: the ``repro`` profile derandomizes, so every
machine (CI included) draws the same examples and a red run can be rerun anywhere.
``HYPOTHESIS_PROFILE=explore`` draws fresh random examples on each run; run it before
a stop to look for new counterexamples.

``CASTWISE_TEST_PROFILE=DIR`` writes, per worker, one line per test to ``DIR/<worker>.tsv``:
the test id, the CPU seconds its call took (setup and teardown included), the worker's
resident memory after it, in MB, and the XLA executables it obtained (compiled, or loaded
from JAX's persistent cache) with the seconds they took. CPU time, not wall time, because these machines are shared
and differ in speed; ``benchmarks/test_cost.py DIR`` sums the lines by file and by test.
"""

from __future__ import annotations

import atexit
import ctypes
import ctypes.util
import gc
import os
import re
import resource
import shutil
import sys
import tempfile
import time
from collections.abc import Generator
from typing import TextIO

import pytest
from hypothesis import settings

#: One OpenBLAS thread per test process (unless the environment says otherwise), read when NumPy
#: loads OpenBLAS, so set here, before any test module imports NumPy (xdist workers inherit it).
#: The tests' arrays are small, so OpenBLAS computes on one thread anyway, and what a second
#: thread changes is its waiting: it spins between calls, and with two workers on two cores
#: that spinning took about a tenth of the CPU seconds of the files measured
#: (tests/runtime/test_kernels.py with test_rules_windowed.py: 50 CPU s against 46, serially).
#: Results do not change: OpenBLAS splits a product's output rows and columns between threads,
#: never a sum, below sizes far past the tests'.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

settings.register_profile("repro", derandomize=True, print_blob=True)
settings.register_profile("explore", derandomize=False, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "repro"))


def pytest_configure(config: pytest.Config) -> None:
    """Keep what XLA compiles for the tests in JAX's persistent cache, shared by the xdist workers
    and kept between runs: ``.pytest_cache/d/xla`` (``CASTWISE_TEST_XLA_CACHE=DIR`` puts it
    elsewhere, ``CASTWISE_TEST_XLA_CACHE=`` turns it off).

    Most of the run's CPU is XLA compiling the JAX references, one executable per primitive,
    shape and dtype; the caches cleared after each module (``_release_memory``) and the two
    workers would compile many of them again. A cached executable is the one a fresh compile
    gives (the key is the lowered program, the compile options and the jax/jaxlib versions).
    Every executable is kept however quickly it compiled, as ``castwise parity`` does, and the
    sweeps the tests run use the same directory instead of the user's cache.
    """
    directory = os.environ.get("CASTWISE_TEST_XLA_CACHE")
    if directory is None:
        cache = getattr(config, "cache", None)  # None under -p no:cacheprovider: no cache then
        directory = "" if cache is None else str(cache.mkdir("xla"))
    # ``castwise parity`` run by the tests: here too, never in the user's cache
    os.environ["CASTWISE_PARITY_CACHE"] = directory
    _fresh_reference_store()
    if not directory:
        return
    settings_ = {
        "jax_compilation_cache_dir": directory,
        "jax_persistent_cache_min_compile_time_secs": 0.0,
        "jax_persistent_cache_min_entry_size_bytes": 0,
    }
    for name, value in settings_.items():  # read by JAX when it is imported: xdist workers inherit them
        os.environ.setdefault(name.upper(), str(value))
    jax = sys.modules.get("jax")
    if jax is not None:  # imported already (by a plugin): set it directly
        for name, value in settings_.items():
            jax.config.update(name, value)


#: "file::test function" -> k: about one parametrized row in k runs by default. Measured with
#: ``CASTWISE_TEST_PROFILE`` (benchmarks/test_cost.py); the trailing figure is the function's
#: seconds (wall time, all rows, on a loaded 2-core machine) when k was chosen, aiming at about
#: 4 s of that per function. Rows that name an op family or a dtype family no kept row names yet
#: are kept too, so each family keeps rows (``_sampled_rows``).
SAMPLED: dict[str, int] = {
    "tests/runtime/test_parallel.py::test_every_elementwise_op_and_dtype_gives_the_unsplit_bits": 6,  # 4.9 (CPU s)
    "tests/autodiff/test_lu_solve_trans.py::test_jvp_and_vjp_match_jax": 4,  # 23 (CPU s, loaded machine)
    "tests/autodiff/test_lu_solve_trans.py::test_values_match_jax_eager_and_jitted": 4,  # 16
    "tests/autodiff/test_lu_solve_trans.py::test_vmap_of_the_solve_and_of_its_gradient": 3,  # 10
    "tests/autodiff/test_rules_linalg_eig_qr.py::test_jvp_and_vjp_match_jax": 10,  # 380 (loaded machine)
    "tests/autodiff/test_rules_linalg_eig_qr.py::test_finite_differences": 4,  # 60
    "tests/runtime/test_linalg_functions.py::test_integer_inputs_follow_jax_numpy": 6,  # 30
    "tests/runtime/test_linalg_functions.py::test_jit_matches_eager_and_jax_grad": 4,  # 60
    "tests/runtime/test_linalg_functions.py::test_vmap_matches_jax_vmap": 4,  # 20
    "tests/runtime/test_weak_propagation.py::test_add_and_result_type_match_jax": 4,  # 20 (CPU s)
    "tests/runtime/test_linalg_precision.py::test_eager_equals_jit": 3,  # 18 (CPU s)
    "tests/passes/test_lower_jax.py::test_each_op_lowers_to_lax_and_matches_the_interpreter": 148,  # 590
    "tests/autodiff/test_vmap.py::test_vmap_of_every_op_matches_jax_vmap": 110,  # 437
    "tests/runtime/test_tensor.py::test_binary_operators_match_jax_numpy_in_dtype_and_value": 16,  # 409
    "tests/autodiff/test_rules_structural.py::test_parity_with_jax": 84,  # 334
    "tests/runtime/test_memory.py::test_cached_outputs_give_every_elementwise_result_bit_for_bit": 73,  # 317
    "tests/runtime/test_weak.py::test_weak_rule_matches_jax_lax": 69,  # 273
    "tests/passes/test_lower_jax.py::test_vjp_programs_of_every_differentiable_op_lower": 56,  # 224
    "tests/runtime/test_opfamilies.py::test_float_only_ops_on_integers_follow_jax_numpy": 108,  # 213
    "tests/autodiff/test_reductions_scans.py::test_scan_derivatives_match_jax_with_ties_and_zeros": 200,  # 201
    "tests/runtime/test_broadcast.py::test_gradients_sum_back_to_each_operand_shape": 9,  # 198
    "tests/runtime/test_kernels.py::test_elementwise_matches_lax": 98,  # 194
    "tests/runtime/test_numerics.py::test_reduce_max_min_order_signed_zeros_as_xla": 33,  # 184
    "tests/runtime/test_nn.py::test_elementwise_matches_jax_nn": 43,  # 170
    "tests/runtime/test_preferred_element_type.py::test_preferred_element_type_matches_lax": 82,  # 162
    "tests/autodiff/test_rules_linalg_factor.py::test_svd_vs_jax": 16,  # 156
    "tests/autodiff/test_rules_linalg.py::test_triangular_solve_vs_jax": 38,  # 150
    "tests/runtime/test_broadcast.py::test_shapes_and_values_match_jax_numpy": 32,  # 139
    "tests/autodiff/test_rules_linalg_factor.py::test_lu_vs_jax": 20,  # 133
    "tests/runtime/test_linalg_namespace.py::test_matches_jax_numpy_linalg": 186,  # 121
    "tests/runtime/test_special.py::test_binary_special_functions_stay_within_the_measured_ulps_of_jax": 20,  # 119
    "tests/autodiff/test_rules_linalg_factor.py::test_solve_inv_det_slogdet_vs_jax": 4,  # 108
    "tests/runtime/test_numpy_elementwise.py::test_matches_the_policys_library": 27,  # 105
    "tests/autodiff/test_rules_sorting.py::test_jvp_and_vjp_match_jax": 52,  # 102
    "tests/runtime/test_nn.py::test_softmax_matches_jax_nn": 25,  # 99
    "tests/autodiff/test_rules_sorting.py::test_scatter_reductions_match_lax": 25,  # 98
    "tests/runtime/test_creation.py::test_rows_jax": 48,  # 95
    "tests/autodiff/test_fft.py::test_namespace_matches_jax_numpy_fft": 20,  # 90
    "tests/runtime/test_policy_laws.py::test_jax_result_type_of_every_triple_matches_jax": 2,  # 82
    "tests/autodiff/test_vmap_pytrees.py::test_vmap_of_grad_and_grad_of_vmap_with_dict_parameters": 3,  # 81
    "tests/runtime/test_strategies.py::test_tensors_of_every_dtype_are_small_finite_and_moderate": 20,  # 78
    "tests/runtime/test_nn.py::test_gradient_matches_jax_grad": 13,  # 71
    "tests/runtime/test_numerics.py::test_max_min_order_signed_zeros_as_xla": 18,  # 71
    "tests/runtime/test_opfamilies.py::test_linalg_on_integers_follows_jax_numpy_and_numpy": 17,  # 64
    "tests/runtime/test_kernels_xla_order.py::test_one_axis_reductions_match_xla_bit_for_bit": 17,  # 64
    "tests/runtime/test_bad_inputs.py::test_bad_input_raises_castwise_error_naming_op_and_policy": 16,  # 64
    "tests/autodiff/test_rules_linalg_factor.py::test_qr_vs_jax": 12,  # 63
    "tests/runtime/test_opfamilies.py::test_real_imag_conj_of_real_inputs_follow_jax_numpy": 16,  # 62
    "tests/autodiff/test_rules_elementwise.py::test_parity_with_jax": 16,  # 62
    "tests/runtime/test_manipulation.py::test_product_matches_the_policy_library": 30,  # 59
    "tests/runtime/test_opfamilies.py::test_rounding_and_tests_of_integers_follow_the_library": 15,  # 57
    "tests/runtime/test_nn.py::test_softmax_gradient_matches_jax_grad": 8,  # 54
    "tests/runtime/test_kernels.py::test_convert_matches_lax": 12,  # 52
    "tests/runtime/test_memory.py::test_memory_still_viewed_is_never_reused": 4,  # 50
    "tests/runtime/test_kernels_linalg_factor.py::test_svd_matches_lax": 13,  # 49
    "tests/autodiff/test_rules_sorting.py::test_select_n_matches_lax": 13,  # 48
    "tests/autodiff/test_rules_sorting.py::test_top_k_along_an_axis_matches_lax_bit_for_bit": 12,  # 47
    "tests/autodiff/test_rules_sorting.py::test_sort_matches_lax_bit_for_bit": 12,  # 45
    "tests/runtime/test_tensor.py::test_python_scalars_are_weak_like_jax": 12,  # 44
    "tests/runtime/test_manipulation.py::test_manipulation_matches_the_policy_library": 22,  # 44
    "tests/runtime/test_policy_laws.py::test_jax_result_type_is_order_independent_and_matches_jax": 2,  # 42
    "tests/autodiff/test_rules_sorting.py::test_multi_operand_sort_is_stable_like_lax": 11,  # 41
    "tests/runtime/test_creation.py::test_gradient_matches_jax": 11,  # 41
    "tests/autodiff/test_rules_linalg.py::test_eigh_vs_jax": 8,  # 38
    "tests/runtime/test_kernels.py::test_elementwise_dtype_acceptance_matches_lax": 10,  # 37
    "tests/autodiff/test_rules_special.py::test_every_branch_against_jax_and_check_grads": 10,  # 37
    "tests/runtime/test_numpy_elementwise.py::test_gradient_matches_jax_grad": 10,  # 36
    "tests/autodiff/test_rules_windowed.py::test_select_ops_match_lax": 4,  # 36
    "tests/autodiff/test_reductions_scans.py::test_logsumexp_matches_jax": 9,  # 35
    "tests/runtime/test_special.py::test_unary_special_functions_stay_within_the_measured_ulps_of_jax": 9,  # 35
    "tests/runtime/test_numerics.py::test_sum_and_mean_match_jnp": 8,  # 35
    "tests/runtime/test_manipulation.py::test_gradient_matches_jax": 9,  # 35
    "tests/autodiff/test_rules_special.py::test_igamma_family_in_both_operands_first_order": 4,  # 34
    "tests/runtime/test_kernels_linalg_factor.py::test_qr_matches_lax": 8,  # 30
    "tests/autodiff/test_reductions_scans.py::test_scans_match_lax": 24,  # 29
    "tests/autodiff/test_rules_sorting.py::test_top_k_matches_lax_bit_for_bit": 8,  # 28
    "tests/runtime/test_strategies.py::test_operand_pairs_share_a_shape_and_their_dtypes_promote": 6,  # 28
    "tests/autodiff/test_vmap_pytrees.py::test_pytree_in_axes_and_out_axes_match_jax_vmap": 7,  # 27
    "tests/runtime/test_manipulation.py::test_vmap_matches_jax_vmap": 7,  # 27
    "tests/autodiff/test_rules_windowed.py::test_conv_jvp_and_vjp_match_jax": 2,  # 26
    "tests/runtime/test_kernels.py::test_narrow_inverse_functions_follow_xlas_expansions_sampled": 7,  # 25
    "tests/runtime/test_kernels_linalg_factor.py::test_lu_matches_lax": 7,  # 25
    "tests/runtime/test_kernels.py::test_structural_matches_lax": 7,  # 24
    "tests/runtime/test_manipulation.py::test_mixed_dtypes_promote_as_the_library_does": 7,  # 24
    "tests/runtime/test_policy_laws.py::test_result_type_is_order_independent": 3,  # 23
    "tests/autodiff/test_rules_linalg_factor.py::test_eigvals_vs_jax": 4,  # 23
    "tests/runtime/test_kernels.py::test_small_float_elementwise_bit_for_bit": 6,  # 23
    "tests/runtime/test_kernels_new_dtypes.py::test_half_complex_elementwise_is_complex64_rounded_per_part": 6,  # 22
    "tests/autodiff/test_vmap_pytrees.py::test_vmap_of_jvp_and_jvp_of_vmap": 3,  # 22
    "tests/runtime/test_kernels.py::test_reductions_match_lax": 6,  # 22
    "tests/runtime/test_kernels.py::test_convert_to_small_floats_rounds_once": 6,  # 22
    "tests/runtime/test_nn.py::test_one_hot_matches_jax_nn": 6,  # 22
    "tests/autodiff/test_rules_sorting.py::test_split_matches_lax": 6,  # 21
    "tests/autodiff/test_rules_windowed.py::test_reduce_window_jvp_and_vjp_match_jax": 3,  # 21
    "tests/runtime/test_strategies.py::test_mixed_dtype_pairs_come_in_both_orders": 6,  # 21
    "tests/test_examples.py::test_example_runs": 4,  # 20
    "tests/runtime/test_kernels_new_dtypes.py::test_convert_int2_and_uint2_match_lax_both_ways": 2,  # 20
    "tests/autodiff/test_jacobians.py::test_random_rn_to_rm_jacobians_match_jax": 5,  # 20
    "tests/runtime/test_kernels_new_dtypes.py::test_int2_and_uint2_ops_match_lax_on_every_pair": 2,  # 20
    "tests/runtime/test_linalg_namespace.py::test_integer_inputs_follow_jax_numpy": 5,  # 19
    "tests/autodiff/test_rules_windowed.py::test_conv_values_match_lax": 9,  # 18
    "tests/runtime/test_tensor.py::test_python_mod_by_a_python_scalar_promotes_as_the_library": 5,  # 17
    "tests/runtime/test_special.py::test_narrow_floats_exhaustively": 5,  # 17
    "tests/runtime/test_creation.py::test_vmap_matches_jax": 5,  # 16
    "tests/autodiff/test_rules_windowed.py::test_reduce_window_values_match_lax": 15,  # 16
    "tests/runtime/test_linalg_namespace.py::test_check_grads": 4,  # 16
    "tests/runtime/test_policy_laws.py::test_scalar_only_result_type_is_order_independent": 4,  # 15
    "tests/runtime/test_kernels.py::test_cholesky_matches_lax": 4,  # 15
    "tests/runtime/test_kernels.py::test_dynamic_slice_and_update_clamp_like_xla": 4,  # 15
    "tests/runtime/test_kernels.py::test_eigh_matches_lax_and_reads_one_triangle": 4,  # 15
    "tests/runtime/test_preferred_element_type.py::test_jvp_and_vjp_match_jax": 4,  # 15
    "tests/autodiff/test_rules_linalg_factor.py::test_svd_raw_vectors_vs_jax": 2,  # 15
    "tests/runtime/test_opfamilies.py::test_each_plan_decision_is_what_eager_ran": 4,  # 15
    "tests/runtime/test_opfamilies.py::test_bool_add_mul_sum_prod_follow_the_library": 3,  # 14
    "tests/autodiff/test_testing_docs.py::test_python_block_runs": 4,  # 13
    "tests/autodiff/test_rules_structural.py::test_check_grads": 4,  # 13
    "tests/autodiff/test_rules_linalg.py::test_cholesky_vs_jax": 4,  # 13
    "tests/runtime/test_tensor.py::test_python_mod_follows_the_library_with_zero_divisors": 4,  # 13
    "tests/runtime/test_kernels.py::test_triangular_solve_all_flag_combinations": 4,  # 13
    "tests/runtime/test_manipulation.py::test_take_modes_match_jax_numpy": 4,  # 12
    "tests/runtime/test_kernels_new_dtypes.py::test_convert_sub_byte_ints_to_every_inexact_dtype_matches_lax_from_int8": 4,  # noqa: E501
    "tests/runtime/test_kernels_xla_order.py::test_converting_formats_match_xla_over_several_axes": 4,  # 12
    "tests/autodiff/test_vmap.py::test_jacobians_as_vmap_of_vjp_and_of_linearize": 2,  # 12
    "tests/autodiff/test_rules_elementwise.py::test_check_grads": 4,  # 12
    "tests/runtime/test_kernels.py::test_scatter_rows_drop_out_of_bounds": 3,  # 12
    "tests/runtime/test_kernels_new_dtypes.py::test_convert_from_half_complex_is_complex64_converted": 2,  # 11
    "tests/passes/test_lower_jax.py::test_unpromoted_graphs_fail_with_lax_dtype_errors_and_promoted_ones_lower": 3,
    "tests/runtime/test_versions.py::test_only_view_ops_return_memory_an_operand_owns": 3,  # 11
    "tests/autodiff/test_reductions_scans.py::test_logsumexp_gradient_is_softmax": 2,  # 11
    "tests/autodiff/test_rules_sorting.py::test_argsort_matches_jnp": 3,  # 10
    "tests/autodiff/test_reductions_scans.py::test_arg_extreme_matches_lax": 3,  # 10
    "tests/runtime/test_strategies.py::test_mixed_dtype_pairs_differ_and_promote": 3,  # 9
    "tests/autodiff/test_vmap_pytrees.py::test_jit_of_vmap": 3,  # 9
    "tests/autodiff/test_rules_sorting.py::test_check_grads": 3,  # 9
    "tests/test_docs.py::test_code_blocks_run": 3,  # 9
    "tests/autodiff/test_reductions_scans.py::test_bit_reductions_match_lax": 3,  # 9
    "tests/autodiff/test_vmap_pytrees.py::test_vmap_of_vmap": 3,  # 9
    "tests/runtime/test_manipulation.py::test_preferred_element_type_matches_jax_numpy": 3,  # 8
    "tests/runtime/test_kernels_new_dtypes.py::test_convert_to_half_complex_rounds_each_part_as_its_part_type_converts": 2,  # noqa: E501
    "tests/runtime/test_kernels.py::test_dot_general_matches_lax": 3,  # 8
    "tests/runtime/test_kernels.py::test_iota_matches_lax": 2,  # 7
    "tests/runtime/test_kernels.py::test_full_matches_lax": 2,  # 7
    "tests/runtime/test_numerics.py::test_mean_of_many_narrow_values_does_not_overflow": 2,  # 7
    "tests/runtime/test_opfamilies.py::test_numeric_only_ops_on_bools_follow_the_library": 2,  # 7
    "tests/runtime/test_kernels.py::test_scatter_windows_and_modes": 2,  # 7
    "tests/runtime/test_kernels.py::test_gather_rows_with_default_fill": 2,  # 6
    "tests/runtime/test_kernels.py::test_shifts_by_every_amount_follow_lax": 2,  # 6
    "tests/autodiff/test_reductions_scans.py::test_scans_vmap_like_jax": 2,  # 6
    "tests/runtime/test_policy_laws.py::test_promote_types_is_associative": 2,  # 6
    "tests/runtime/test_kernels_xla_order.py::test_sums_round_after_every_step": 2,  # 6
    "tests/runtime/test_numerics.py::test_complex_log1p_special_values_match_jax": 2,  # 6
    "tests/runtime/test_kernels_xla_order.py::test_e8m0_converts_like_xla": 2,  # 6
    "tests/autodiff/test_rules_sorting.py::test_top_k_along_an_axis_vmaps_like_jax": 2,  # 5
    "tests/autodiff/test_vmap.py::test_vmap_of_grad_is_per_example_gradients": 2,  # 5
    "tests/passes/test_lower_jax.py::test_subnormals_are_kept_where_xla_cpu_flushes_them": 2,  # 5
    "tests/autodiff/test_rules_structural.py::test_ties_split_like_jax": 2,  # 5
    "tests/runtime/test_opfamilies.py::test_float_only_ops_on_integers_follow_torch": 2,  # 5
    "tests/runtime/test_kernels_linalg_factor.py::test_eig_matches_lax": 2,  # 5
    "tests/runtime/test_opfamilies.py::test_float_only_ops_on_integers_follow_numpy": 2,  # 5
    "tests/autodiff/test_vmap.py::test_grad_of_a_vmapped_loss": 2,  # 5
    "tests/runtime/test_strategies.py::test_dtypes_are_the_policys_own": 2,  # 5
    "tests/runtime/test_kernels.py::test_empty_reductions_give_lax_identities": 2,  # 5
    "tests/autodiff/test_reductions_scans.py::test_reduce_precision_is_bit_exact_on_every_value_of_narrow_formats": 2,
    "tests/autodiff/test_rules_linalg.py::test_identity_plus_hermitian_eigh_backward": 2,  # 4
    "tests/autodiff/test_vmap.py::test_dynamic_slice_with_batched_start_indices": 2,  # 4
    "tests/runtime/test_numerics.py::test_complex_max_min_pick_as_xla": 2,  # 4
    "tests/autodiff/test_rules_structural.py::test_promoted_replay_matches_jax": 2,  # 4
    "tests/autodiff/test_rules_sorting.py::test_unstable_sort_orders_the_keys_like_lax": 2,  # 4
    "tests/autodiff/test_rules_linalg_factor.py::test_solve_inv_det_slogdet_check_grads": 2,  # 4
    "tests/runtime/test_kernels.py::test_clamp_matches_lax": 2,  # 4
    "tests/runtime/test_weak.py::test_tensor_reductions_drop_the_flag_as_jax_numpy_does": 2,  # 4
    "tests/runtime/test_kernels.py::test_integer_division_edge_cases_follow_xla": 2,  # 4
    "tests/runtime/test_kernels.py::test_triangular_solve_dtypes": 2,  # 4
}


def _families() -> dict[str, str]:
    """Each op name and dtype name (long and short) -> the family a row id token stands for."""
    from runtime.core import dtypes, ops

    found = {name: f"op:{op.family}" for name, op in ops.OPS.items()}
    for d in dtypes.ALL_DTYPES:
        width = "-narrow" if d.bits < 8 else ("-8" if d.bits == 8 and d.kind != "bool" else "")
        found[d.name] = found[d.short] = f"dtype:{d.kind}{width}"
    return found


def _sampled_rows(rows: list[str], k: int, families: dict[str, str]) -> set[int]:
    """The positions of ``rows`` (parametrize ids, in order) a ``SAMPLED`` test runs by default:
    every k-th row, and each row naming an op family or dtype family that no row kept before it
    names, so a default run exercises every family the full table has."""
    kept: set[int] = set()
    covered: set[str] = set()
    for position, row in enumerate(rows):
        names = {families[token] for token in re.split(r"[^A-Za-z0-9_]+", row) if token in families}
        if position % k == 0 or not names <= covered:
            kept.add(position)
            covered |= names
    return kept


@pytest.hookimpl(tryfirst=True)  # before -m deselects by marker
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark every row of a ``SAMPLED`` test outside its sample (``_sampled_rows``) ``slow``."""
    rows: dict[str, list[pytest.Item]] = {}
    for item in items:
        function, _, row = item.nodeid.partition("[")
        if row and function in SAMPLED:
            rows.setdefault(function, []).append(item)
    if not rows:
        return
    families = _families()
    for function, group in rows.items():
        kept = _sampled_rows([item.nodeid.partition("[")[2] for item in group], SAMPLED[function], families)
        for position, item in enumerate(group):
            if position not in kept:
                item.add_marker(pytest.mark.slow)


def _fresh_reference_store() -> None:
    """The sweeps the tests run keep their references in a store of this run's own (shared by the
    xdist workers, which inherit it, and removed at the end), never in the user's: a test must
    not read a reference an earlier run or another castwise left there."""
    if "CASTWISE_PARITY_STORE" in os.environ:
        return
    directory = tempfile.mkdtemp(prefix="castwise-test-store-")
    os.environ["CASTWISE_PARITY_STORE"] = directory
    atexit.register(shutil.rmtree, directory, ignore_errors=True)


def _release_memory() -> None:
    """Drop what JAX compiled for the module that just ran, and hand the freed heap back.

    Eager JAX (the oracles' ``jax.grad``, ``jnp.*`` outside ``jit``) compiles one executable per
    primitive, shape and dtype and keeps it for the life of the process: about 17 MB per
    distinct eager gradient, so an xdist worker grew past 4 GB over the suite. Executables are
    rarely shared between test modules, so clearing JAX's caches after each module bounds a
    worker's memory by its largest module, for a few recompiles. ``malloc_trim`` returns the
    freed pages, so RSS shows what is in use (glibc only; elsewhere it is skipped).
    """
    jax = sys.modules.get("jax")
    if jax is None:
        return
    jax.clear_caches()
    gc.collect()
    if _LIBC is not None:
        _LIBC.malloc_trim(0)


_LIBC_NAME = ctypes.util.find_library("c") if sys.platform.startswith("linux") else None
_LIBC = ctypes.CDLL(_LIBC_NAME) if _LIBC_NAME else None


@pytest.fixture(autouse=True, scope="module")
def _clear_jax_caches_after_each_module() -> Generator[None, None, None]:
    yield
    _release_memory()


#: a worker above this resident size (MB) drops JAX's caches after the test that took it there
_RELEASE_ABOVE_MB = 1300.0


@pytest.fixture(autouse=True)
def _clear_jax_caches_when_memory_is_high() -> Generator[None, None, None]:
    """Within a module, a worker that has grown past ``_RELEASE_ABOVE_MB`` releases too (the
    parity sweeps' modules compile hundreds of reference programs), so no worker holds more
    than about that plus one test's growth."""
    yield
    rss = _rss_mb()
    # and only after growing 500 MB since the last release: a worker whose floor is above the
    # threshold must not clear (and recompile) after every test
    if rss > max(_RELEASE_ABOVE_MB, _released_at[0] + 500.0):
        _release_memory()
        _released_at[0] = _rss_mb()


_released_at: list[float] = [0.0]


_PROFILE_DIR = os.environ.get("CASTWISE_TEST_PROFILE", "")
_profile_file: list[TextIO] = []


def _rss_mb() -> float:
    """The process's resident memory now, in MB (Linux; the peak elsewhere)."""
    try:
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except OSError:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


#: XLA executables obtained (compiled, or loaded from JAX's persistent cache) and the seconds
#: that took, since the profile began; counted only with ``CASTWISE_TEST_PROFILE``
_compiles: list[float] = [0, 0.0]


def _count_compile(event: str, duration_secs: float, **_: str | int) -> None:
    if event == "/jax/core/compile/backend_compile_duration":
        _compiles[0] += 1
        _compiles[1] += duration_secs


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None, None, None]:
    """With ``CASTWISE_TEST_PROFILE`` set, record each test's CPU seconds, the RSS after it, and
    the XLA executables it obtained with the seconds they took."""
    if not _PROFILE_DIR:
        yield
        return
    if not _profile_file:
        try:
            import jax.monitoring
        except ImportError:  # no JAX: no compiles to count
            pass
        else:
            jax.monitoring.register_event_duration_secs_listener(_count_compile)
        os.makedirs(_PROFILE_DIR, exist_ok=True)
        worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
        _profile_file.append(open(os.path.join(_PROFILE_DIR, f"{worker}.tsv"), "a"))  # noqa: SIM115
    start, compiles, compile_s = time.process_time(), *_compiles
    yield
    spent = time.process_time() - start
    line = f"{item.nodeid}\t{spent:.4f}\t{_rss_mb():.0f}\t{_compiles[0] - compiles:.0f}\t{_compiles[1] - compile_s:.4f}"
    _profile_file[0].write(line + "\n")
    _profile_file[0].flush()
