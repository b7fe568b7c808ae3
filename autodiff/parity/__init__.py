"""``castwise parity``: the JAX regression sweep.

For every op of the vocabulary, over dtypes (bool, the signed and unsigned
integers, int2/uint2, bfloat16 .. float64, complex64/128 and the float8 family), operand
orders, Python-scalar operands and active sets, the sweep checks castwise
against JAX:

``agree``
    castwise and JAX accept or refuse the same op/dtype combinations. Both
    refusing makes the case *unsupported* (listed, never silently skipped);
    only one refusing is a failure unless it is a documented, deliberate
    departure (``DEPARTURES``; a departure may also explain a documented
    difference in another check of a case both accept).
``primal``
    the eager result has JAX's dtype exactly and its values exactly (integer
    and bool results, and the correctly rounded real ops) or within the
    dtype's tolerance.
``replay``
    the graph recorded while the op ran eagerly (``runtime.core.graph.collect``)
    verifies (``passes.verify``) and its replay (``runtime.core.graph.evaluate``)
    equals the eager result bit for bit.
``jvp`` / ``vjp``
    ``autodiff.jvp`` equals ``jax.jvp`` and ``autodiff.vjp`` equals
    ``conj(jax_vjp(conj(ct)))`` (castwise's real-inner-product convention is
    the conjugate of JAX's), for every active set; on the eager tape the
    inactive operands receive no cotangent.

The JAX side: under policy ``jax`` the reference for a promoting op is JAX's
own promotion, the ``jax.numpy`` function applied to the raw mixed-dtype
operands (``jnp.add``, ``jnp.where``, ...; ``jnp.result_type`` + ``jax.lax``
where JAX has no mixed-dtype function with the op's meaning: scatter,
dynamic_update_slice, clamp). Non-promoting ops (unary, reductions,
structural, linalg) are compared with ``jax.lax`` directly, as castwise never
converts their operands. Under any other policy the JAX side applies
castwise's plan (``runtime.core.plan.plan``) as explicit
``jax.lax.convert_element_type`` calls and then the same-dtype ``jax.lax``
primitive, so kernels and derivative rules are checked against JAX whatever
the lattice.

Bugs the sweep has found and that are not fixed yet are listed in
``KNOWN_FAILURES``: they are reported, but fail the run only with
``--strict``. ``docs/parity.md`` describes the sweep and lists the unsupported
combinations of a full run (``--markdown`` writes that list).

JAX is imported lazily (``import autodiff`` works without it). Everything
here runs eagerly (``jax.disable_jit``): JAX compiles one executable per
primitive and (dtype, shape) signature, and the sweep reuses a handful of
small shapes so those executables are shared across cases; ``--jobs`` runs
each op's cases in one worker process so its signatures compile once.

Layout: the op table is one module per op family (``cases_binary``, ``cases_contraction``,
``cases_indexing``, ``cases_unary``, ``cases_conversion``, ``cases_reductions``,
``cases_structural``, ``cases_calls``, ``cases_linalg``; ``cases.build_specs`` assembles them and
builds the case list), ``departures`` holds the documented departures and known failures,
``references`` lists what a case asks of JAX (``Request``) and answers it (``evaluate_eager``),
``checks`` runs one case's checks from those answers alone, ``store`` keeps the answers on disk (the
reference store and oracle databases, ``load_oracle``), ``runner`` holds the comparisons, ``report``
summarises, ``cli`` runs the sweep and is ``castwise parity``; ``_common`` holds what they share.
This package re-exports their names.
"""

from __future__ import annotations

from autodiff.parity._common import (  # noqa: F401
    CHECKS,
    CORE_DTYPES,
    DEFAULT_DTYPES,
    DEFAULT_POLICIES,
    FLOAT8_DTYPES,
    NARROW_INT_DTYPES,
    PY_SCALARS,
    PY_VALUES,
    QUICK_CASES,
    Case,
    CheckResult,
    Gen,
    PyScalar,
    Slot,
    Spec,
    _call_ours,
    _jax_x64,
    _make_inputs,
    _ours_args,
    _outputs,
    draw,
    draw_distinct,
    random_like,
    slot_name,
)
from autodiff.parity.cases import (  # noqa: F401
    broadcast_and_weak_specs,
    build_cases,
    build_specs,
    castwise_accepts,
    parse_dtypes,
    policy_dtypes,
)
from autodiff.parity.cases_calls import (  # noqa: F401
    custom_transpose,
    custom_transpose_bwd,
    custom_transpose_fwd,
    custom_transpose_jvp,
    custom_vjp_transpose,
)
from autodiff.parity.cases_contraction import (  # noqa: F401
    _gen_clamp,
)
from autodiff.parity.cli import (  # noqa: F401
    VMAP_BATCH,
    Options,
    Progress,
    _check_arrays,
    add_parser,
    cmd_parity,
    run_case,
    run_parity,
)
from autodiff.parity.departures import (  # noqa: F401
    DEPARTURES,
    KNOWN_FAILURES,
    Departure,
    KnownFailure,
    departure_explaining,
    departure_for,
    known_failure_for,
)
from autodiff.parity.references import (
    Outcome,
    Request,
    evaluate_eager,
    requests_for,
)
from autodiff.parity.report import (  # noqa: F401
    Cell,
    Report,
    group_unsupported,
    markdown,
)
from autodiff.parity.runner import (  # noqa: F401
    CASTWISE_REFUSALS,
    CaseResult,
    compare,
    tolerance,
)
from autodiff.parity.store import (
    OracleCase,
    OracleError,
    Reference,
    load_oracle,
)

__all__ = [
    "CHECKS",
    "CORE_DTYPES",
    "DEFAULT_POLICIES",
    "DEPARTURES",
    "FLOAT8_DTYPES",
    "KNOWN_FAILURES",
    "NARROW_INT_DTYPES",
    "Case",
    "CaseResult",
    "CheckResult",
    "Departure",
    "KnownFailure",
    "Options",
    "OracleCase",
    "OracleError",
    "Outcome",
    "Reference",
    "Report",
    "Request",
    "Spec",
    "build_cases",
    "build_specs",
    "evaluate_eager",
    "load_oracle",
    "markdown",
    "requests_for",
    "run_case",
    "run_parity",
]
