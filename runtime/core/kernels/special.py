"""Kernels of the special functions: erf, erfc, erf_inv, lgamma, digamma, polygamma, zeta,
igamma, igammac, igamma_grad_a, bessel_i0e, bessel_i1e (``runtime.core.ops``, section "special
functions").

XLA CPU has no library call for most of these: it expands each one into elementary ops
(polynomials, rational functions, a Lanczos sum, loops) and runs them in the operand's dtype,
float16 and bfloat16 in float32 (``erf`` and the incomplete gammas upcast explicitly; the others'
expansions run in float32 as every narrow-float op does). The kernels here evaluate the same
approximations, with the same constants rounded to the compute dtype and the same order of
operations, in float32 for every float narrower than 64 bits and in float64 for float64; the
result is rounded back once. What still differs from XLA is the elementary functions under them
(XLA's own exp / log / log1p / sin / cos / pow polynomials against NumPy's), which moves a
result by an ulp or so where the expansion amplifies such a difference; tests/runtime/
test_special.py measures the distance to JAX per dtype on dense grids.

float32 erf is Eigen's rational interpolant with fused multiply-adds, as XLA's intrinsic; float64
erf is the C library's, as XLA CPU calls it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, Final

import numpy as np

from runtime.core.kernels._common import _F32, _F64, _WIDEN, KERNELS, Array, Kernel, _back

# -- shared machinery ----------------------------------------------------------------------------


def _special_unary(name: str, f32: Callable[[Array], Array], f64: Callable[[Array], Array], doc: str) -> Kernel:
    """A kernel running ``f64`` on float64 and ``f32`` on float32 and every narrower float."""

    def kernel(x: Array) -> tuple[Array, ...]:
        with np.errstate(all="ignore"):
            if x.dtype == _F64:
                return (np.asarray(f64(x), _F64),)
            if x.dtype == _F32:
                return (np.asarray(f32(x), _F32),)
            return (np.asarray(_back(np.asarray(f32(x.astype(_F32)), _F32), x.dtype)),)

    kernel.__name__ = kernel.__qualname__ = f"{name}_kernel"
    kernel.__doc__ = doc
    return kernel


def _special_binary(
    name: str, f32: Callable[[Array, Array], Array], f64: Callable[[Array, Array], Array], doc: str
) -> Kernel:
    """The binary ``_special_unary``: operands broadcast, one float dtype."""

    def kernel(x: Array, y: Array) -> tuple[Array, ...]:
        x, y = np.broadcast_arrays(x, y)
        with np.errstate(all="ignore"):
            if x.dtype == _F64:
                return (np.asarray(f64(x.copy(), y.copy()), _F64),)
            if x.dtype == _F32:
                return (np.asarray(f32(x.copy(), y.copy()), _F32),)
            wide = _WIDEN.get(x.dtype, _F32)
            out = np.asarray(f32(x.astype(wide), y.astype(wide)), _F32)
            return (np.asarray(_back(out, x.dtype)),)

    kernel.__name__ = kernel.__qualname__ = f"{name}_kernel"
    kernel.__doc__ = doc
    return kernel


def _c(values: Sequence[float], dtype: np.dtype[Any]) -> list[Any]:
    """Constants rounded to the compute dtype, as XLA folds them."""
    return [dtype.type(v) for v in values]


def _fma(a: Any, b: Any, c: Any) -> Array:
    """a * b + c rounded once, as the fused multiply-add XLA CPU contracts a product and a sum into.

    float32 computes in float64 (the product is exact there). float64 adds the product's exact
    error (Dekker's two-product over Veltkamp's halves) and the sum's (Knuth's two-sum), which is
    the correctly rounded result in all but rare double-rounding ties; where the split would
    overflow, the plain a * b + c stands.
    """
    a, b, c = np.asarray(a), np.asarray(b), np.asarray(c)
    if a.dtype != _F64:
        return np.asarray(a.astype(_F64) * b.astype(_F64) + c.astype(_F64)).astype(a.dtype)
    p = a * b
    split = 134217729.0  # 2**27 + 1
    ca, cb = a * split, b * split
    ah, bh = ca - (ca - a), cb - (cb - b)
    al, bl = a - ah, b - bh
    perr = ((ah * bh - p) + ah * bl + al * bh) + al * bl
    s = p + c
    bb = s - p
    serr = (p - (s - bb)) + (c - bb)
    out = s + (serr + perr)
    return np.where(np.isfinite(out) & np.isfinite(perr), out, s)


def _horner(t: Array, coefficients: Sequence[float]) -> Array:
    """c0 t**n + ... + cn, evaluated as XLA's expansions do: p = p * t + c, highest degree first,
    each step one fused multiply-add."""
    cs = _c(coefficients, t.dtype)
    p = np.full_like(t, cs[0])
    for c in cs[1:]:
        p = _fma(p, t, c)
    return p


def _monic_horner(t: Array, coefficients: Sequence[float]) -> Array:
    """t**n + c1 t**(n-1) + ... + cn (the leading 1 is implicit: p = t + c1 first)."""
    cs = _c(coefficients, t.dtype)
    p = t + cs[0]
    for c in cs[1:]:
        p = _fma(p, t, c)
    return p


def _chebyshev(t: Array, coefficients: Sequence[float]) -> Array:
    """Clenshaw's recurrence for a Chebyshev series (Cephes' chbevl), as JAX writes it:
    b0 = t b1 - b2 + c, result (b0 - b2) / 2."""
    cs = _c(coefficients, t.dtype)
    b0 = _fma(t, t.dtype.type(0), cs[0])
    b1 = np.zeros_like(t)
    b2 = np.zeros_like(t)
    for c in cs[1:]:
        b2 = b1
        b1 = b0
        b0 = _fma(t, b1, -b2) + c
    return (b0 - b2) * t.dtype.type(0.5)


# -- erf, erfc, erf_inv ----------------------------------------------------------------------------

#: Eigen's float32 erf: odd numerator, even denominator (monomial coefficients, lowest first).
_ERF32_P: Final = (1.128379143519084, 0.18520832239976145, 0.050955695062380861, 0.0034082910107109506,
                   0.00022905065861350646)  # fmt: skip
_ERF32_Q: Final = (1.0, 0.49746925110067538, 0.11098505178285362, 0.014070470171167667, 0.0010179625278914885,
                   0.000023547966471313185, -1.1791602954361697e-7)  # fmt: skip
#: |x| from which float32 erf rounds to +-1 (erf_inv(1 - ulp/2)).
_ERF32_SATURATES: Final = np.float32(3.832506856900711)


def _erf32(x: Array) -> Array:
    x2 = x * x
    p = np.full_like(x, _ERF32_P[-1])
    p = _fma(x2, p, np.float32(_ERF32_P[-2]))
    for c in reversed(_ERF32_P[:-2]):
        p = _fma(x2, p, np.float32(c))
    p = x * p
    q = np.full_like(x, _ERF32_Q[-1])
    for c in reversed(_ERF32_Q[:-1]):
        q = _fma(x2, q, np.float32(c))
    return np.where(np.abs(x) >= _ERF32_SATURATES, np.copysign(np.float32(1), x), p / q)


_erf64_libm = np.frompyfunc(math.erf, 1, 1)


def _erf64(x: Array) -> Array:
    return np.asarray(_erf64_libm(x), _F64)  # the C library's erf (Python's math.erf calls it)


KERNELS["erf"] = _special_unary("erf", _erf32, _erf64, "The error function 2/sqrt(pi) int_0^x exp(-t**2) dt.")

# Cephes' erfc (float32: erfcf's polynomials; float64: erfc's rational functions).
_ERFC32_SMALL: Final = (7.85386146e-05, -0.000801019371, 0.00518832775, -0.0268538129, 0.112835854, -0.37612626,
                        1.12837911)  # fmt: skip
_ERFC32_P: Final = (0.0232682, -0.138703942, 0.368742466, -0.582473278, 0.621000469, -0.494451523, 0.340488,
                    -0.274112701, 0.563825965)  # fmt: skip
_ERFC32_R: Final = (-10.477664, 12.9772, -7.49551868, 2.92101908, -1.01526523, 0.42184633, -0.282076746,
                    0.564189494)  # fmt: skip
_ERFC64_T: Final = (9.6049737398705162, 90.026019720384269, 2232.0053459468431, 7003.3251411280507,
                    55592.301301039493)  # fmt: skip
_ERFC64_U: Final = (33.561714164750313, 521.35794978015269, 4594.3238297098014, 22629.000061389095,
                    49267.394260863592)  # fmt: skip
_ERFC64_P: Final = (2.4619698147353052e-10, 0.56418956483106886, 7.4632105644226989, 48.637197098568137,
                    196.5208329560771, 526.44519499547732, 934.52852717195765, 1027.5518868951572,
                    557.53533536939938)  # fmt: skip
_ERFC64_Q: Final = (13.228195115474499, 86.707214088598974, 354.93777888781989, 975.70850174320549,
                    1823.9091668790973, 2246.3376081871097, 1656.6630919416134, 557.53534081772773)  # fmt: skip
_ERFC64_R: Final = (0.56418958354775506, 1.275366707599781, 5.0190504225118051, 6.160210979930536,
                    7.4097426995044895, 2.9788666537210022)  # fmt: skip
_ERFC64_S: Final = (2.2605286322011726, 9.3960352493800148, 12.048953980809666, 17.081445074756591,
                    9.6089680906328585, 3.3690764510008151)  # fmt: skip


def _erfc32(x: Array) -> Array:
    one = np.float32(1)
    x2 = x * x
    small = one - x * _horner(x2, _ERFC32_SMALL)
    a = np.abs(x)
    y = one / x2
    p = np.where(a < np.float32(2), _horner(y, _ERFC32_P), _horner(y, _ERFC32_R))
    z = -x2
    tail = (np.exp(z) * (one / a)) * p  # XLA's order: exp(-x**2) / |x| first
    tail = np.where(z < np.float32(-88.7228394), np.float32(0), tail)  # exp underflows
    tail = np.where(x < 0, np.float32(2) - tail, tail)
    return np.where(a < one, small, tail)


def _erfc64(x: Array) -> Array:
    x2 = x * x
    small = 1.0 - x * _horner(x2, _ERFC64_T) / _monic_horner(x2, _ERFC64_U)
    a = np.abs(x)
    z = -x2
    e = np.exp(z)
    tail = np.where(a < 8.0, (e * _horner(a, _ERFC64_P)) / _monic_horner(a, _ERFC64_Q),
                    (e * _horner(a, _ERFC64_R)) / _monic_horner(a, _ERFC64_S))  # fmt: skip
    tail = np.where(z < -709.782712893384, 0.0, tail)  # exp underflows
    tail = np.where(x < 0, 2.0 - tail, tail)
    return np.where(a < 1.0, small, tail)


KERNELS["erfc"] = _special_unary("erfc", _erfc32, _erfc64, "The complementary error function 1 - erf(x).")

# Giles' approximation of erf_inv ("Approximating the erfinv function", GPU Computing Gems):
# polynomials in w - c or sqrt(w) - c with w = -log((1 - x)(1 + x)).
_ERF_INV32_CENTRAL: Final = (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087,
                             -0.00125372503, -0.00417768164, 0.246640727, 1.50140941)  # fmt: skip
_ERF_INV32_TAIL: Final = (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773,
                          -0.0076224613, 0.00943887047, 1.00167406, 2.83297682)  # fmt: skip
_ERF_INV64_CENTRAL: Final = (
    -3.64441206401782e-21,
    -1.6850591381820166e-19,
    1.28584807152564e-18,
    1.1157877678025181e-17,
    -1.3331716628546209e-16,
    2.0972767875968562e-17,
    6.6376381343583238e-15,
    -4.0545662729752069e-14,
    -8.1519341976054722e-14,
    2.6335093153082323e-12,
    -1.2975133253453532e-11,
    -5.4154120542946279e-11,
    1.0512122733215323e-09,
    -4.1126339803469837e-09,
    -2.9070369957882005e-08,
    4.2347877827932404e-07,
    -1.3654692000834679e-06,
    -1.3882523362786469e-05,
    0.00018673420803405714,
    -0.000740702534166267,
    -0.0060336708714301491,
    0.24015818242558962,
    1.6536545626831027,
)
_ERF_INV64_MID: Final = (
    2.2137376921775787e-09,
    9.0756561938885391e-08,
    -2.7517406297064545e-07,
    1.8239629214389228e-08,
    1.5027403968909828e-06,
    -4.013867526981546e-06,
    2.9234449089955446e-06,
    1.2475304481671779e-05,
    -4.7318229009055734e-05,
    6.8284851459573175e-05,
    2.4031110387097894e-05,
    -0.00035503752036284748,
    0.0009532893797373805,
    -0.0016882755560235047,
    0.0024914420961078508,
    -0.0037512085075692412,
    0.0053709145535900636,
    1.0052589676941592,
    3.0838856104922208,
)
_ERF_INV64_TAIL: Final = (
    -2.7109920616438573e-11,
    -2.5556418169965252e-10,
    1.5076572693500548e-09,
    -3.789465440126737e-09,
    7.61570120807834e-09,
    -1.496002662714924e-08,
    2.9147953450901081e-08,
    -6.7711997758452339e-08,
    2.2900482228026655e-07,
    -9.9298272942317e-07,
    4.5260625972231537e-06,
    -1.9681778105531671e-05,
    7.5995277030017761e-05,
    -0.00021503011930044477,
    -0.00013871931833623122,
    1.0103004648645344,
    4.8499064014085844,
)


def _erf_inv32(x: Array) -> Array:
    w = -np.log1p(x * -x)
    central = w < np.float32(5)
    p = np.where(
        central,
        _horner(w + np.float32(-2.5), _ERF_INV32_CENTRAL),
        _horner(np.sqrt(w) + np.float32(-3), _ERF_INV32_TAIL),
    )
    return np.where(np.abs(x) == np.float32(1), x * np.float32(np.inf), p * x)


def _erf_inv64(x: Array) -> Array:
    w = -np.log1p(x * -x)
    s = np.sqrt(w)
    p = np.where(
        w < 6.25,
        _horner(w - 3.125, _ERF_INV64_CENTRAL),
        np.where(w < 16.0, _horner(s - 3.25, _ERF_INV64_MID), _horner(s - 5.0, _ERF_INV64_TAIL)),
    )
    return np.where(np.abs(x) == 1.0, x * np.inf, p * x)


KERNELS["erf_inv"] = _special_unary(
    "erf_inv", _erf_inv32, _erf_inv64, "The inverse error function on (-1, 1) (+-inf at +-1, NaN outside)."
)

# -- lgamma, digamma --------------------------------------------------------------------------------

#: The Lanczos approximation XLA uses (g = 7, nine terms; the first is 1 up to rounding).
_LANCZOS_G: Final = 7.0
_LANCZOS_BASE: Final = 0.99999999999980993
_LANCZOS: Final = (676.5203681218851, -1259.1392167224028, 771.32342877765313, -176.61502916214059, 12.507343278686905,
                   -0.13857109526572012, 9.9843695780195716e-06, 1.5056327351493116e-07)  # fmt: skip
_LOG_LANCZOS_T: Final = math.log(_LANCZOS_G + 0.5)  # log(7.5)
_LOG_SQRT_2PI: Final = 0.91893853320467267
_LOG_PI: Final = 1.1447298858494002


def _lanczos_z(x: Array) -> tuple[Array, Array]:
    """(x < 1/2, z): the Lanczos argument z = x - 1, or -x where the reflection formula is used."""
    reflect = x < x.dtype.type(0.5)
    return reflect, np.where(reflect, -x, x + x.dtype.type(-1))


def _log_lanczos_t(z: Array) -> Array:
    t = z.dtype.type
    return np.log1p(z * t(1 / (_LANCZOS_G + 0.5))) + t(_LOG_LANCZOS_T)  # log(z + 7.5), accurate for small z


def _lgamma(x: Array) -> Array:
    t = x.dtype.type
    reflect, z = _lanczos_z(x)
    s = _c(_LANCZOS, x.dtype)
    series = s[0] / (z + t(1)) + t(_LANCZOS_BASE)
    for i, c in enumerate(s[1:], start=2):
        series = series + c / (z + t(i))
    log_t = _log_lanczos_t(z)
    log_y = ((z + t(0.5)) - (z + t(_LANCZOS_G + 0.5)) / log_t) * log_t + t(_LOG_SQRT_2PI) + np.log(series)
    # reflection: lgamma(x) = log(pi) - log|sin(pi x)| - lgamma(1 - x), with sin(pi x) reduced to [0, pi/2]
    a = np.abs(x)
    frac = a - np.floor(a)
    reduced = np.where(t(0.5) < frac, t(1) - frac, frac)
    log_sin = np.log(np.sin(reduced * t(math.pi)))
    reflected = np.where(np.isfinite(log_sin), (t(_LOG_PI) - log_sin) - log_y, -log_sin)
    out = np.where(reflect, reflected, log_y)
    return np.where(a == t(np.inf), t(np.inf), out)


KERNELS["lgamma"] = _special_unary("lgamma", _lgamma, _lgamma, "log|Gamma(x)| (+inf at the poles 0, -1, -2 ...).")


def _digamma(x: Array) -> Array:
    t = x.dtype.type
    reflect, z = _lanczos_z(x)
    s = _c(_LANCZOS, x.dtype)
    num = np.zeros_like(z)
    den = np.full_like(z, t(_LANCZOS_BASE))
    for i, c in enumerate(s, start=1):
        zi = z + t(i)
        num = num - c / (zi * zi)
    for i, c in enumerate(s, start=1):
        den = c / (z + t(i)) + den if i == 1 else den + c / (z + t(i))
    y = (_log_lanczos_t(z) + num / den) - t(_LANCZOS_G) / (z + t(_LANCZOS_G + 0.5))
    # reflection: digamma(x) = digamma(1 - x) - pi cot(pi x), with pi x reduced by a whole period
    r = (x + np.abs(np.floor(x + t(0.5)))) * t(math.pi)
    reflected = y - (np.cos(r) * t(math.pi)) / np.sin(r)
    out = np.where(reflect, reflected, y)
    return np.where((x <= t(0)) & (x == np.floor(x)), t(np.nan), out)


KERNELS["digamma"] = _special_unary(
    "digamma", _digamma, _digamma, "The digamma function psi(x) = d/dx lgamma(x) (NaN at 0, -1, -2 ...)."
)

# -- bessel_i0e, bessel_i1e -------------------------------------------------------------------------

# Cephes' Chebyshev series of exp(-|x|) I0(x) and exp(-|x|) I1(x) / x on [0, 8] (in x/2 - 2) and of
# their sqrt(x)-scaled tails on (8, inf) (in 32/x - 2). float32 uses the series' last terms only.
_I0E_A: Final = (
    -4.41534164647933937950e-18,
    3.33079451882223809783e-17,
    -2.43127984654795469359e-16,
    1.71539128555513303061e-15,
    -1.16853328779934516808e-14,
    7.67618549860493561688e-14,
    -4.85644678311192946090e-13,
    2.95505266312963983461e-12,
    -1.72682629144155570723e-11,
    9.67580903537323691224e-11,
    -5.18979560163526290666e-10,
    2.65982372468238665035e-9,
    -1.30002500998624804212e-8,
    6.04699502254191894932e-8,
    -2.67079385394061173391e-7,
    1.11738753912010371815e-6,
    -4.41673835845875056359e-6,
    1.64484480707288970893e-5,
    -5.75419501008210370398e-5,
    1.88502885095841655729e-4,
    -5.76375574538582365885e-4,
    1.63947561694133579842e-3,
    -4.32430999505057594430e-3,
    1.05464603945949983183e-2,
    -2.37374148058994688156e-2,
    4.93052842396707084878e-2,
    -9.49010970480476444210e-2,
    1.71620901522208775349e-1,
    -3.04682672343198398683e-1,
    6.76795274409476084995e-1,
)
_I0E_B: Final = (
    -7.23318048787475395456e-18,
    -4.83050448594418207126e-18,
    4.46562142029675999901e-17,
    3.46122286769746109310e-17,
    -2.82762398051658348494e-16,
    -3.42548561967721913462e-16,
    1.77256013305652638360e-15,
    3.81168066935262242075e-15,
    -9.55484669882830764870e-15,
    -4.15056934728722208663e-14,
    1.54008621752140982691e-14,
    3.85277838274214270114e-13,
    7.18012445138366623367e-13,
    -1.79417853150680611778e-12,
    -1.32158118404477131188e-11,
    -3.14991652796324136454e-11,
    1.18891471078464383424e-11,
    4.94060238822496958910e-10,
    3.39623202570838634515e-9,
    2.26666899049817806459e-8,
    2.04891858946906374183e-7,
    2.89137052083475648297e-6,
    6.88975834691682398426e-5,
    3.36911647825569408990e-3,
    8.04490411014108831608e-1,
)
_I1E_A: Final = (
    2.77791411276104639959e-18,
    -2.11142121435816608115e-17,
    1.55363195773620046921e-16,
    -1.10559694773538630805e-15,
    7.60068429473540693410e-15,
    -5.04218550472791168711e-14,
    3.22379336594557470981e-13,
    -1.98397439776494371520e-12,
    1.17361862988909016308e-11,
    -6.66348972350202774223e-11,
    3.62559028155211703701e-10,
    -1.88724975172282928790e-9,
    9.38153738649577178388e-9,
    -4.44505912879632808065e-8,
    2.00329475355213526229e-7,
    -8.56872026469545474066e-7,
    3.47025130813767847674e-6,
    -1.32731636560394358279e-5,
    4.78156510755005422638e-5,
    -1.61760815825896745588e-4,
    5.12285956168575772895e-4,
    -1.51357245063125314899e-3,
    4.15642294431288815669e-3,
    -1.05640848946261981558e-2,
    2.47264490306265168283e-2,
    -5.29459812080949914269e-2,
    1.02643658689847095384e-1,
    -1.76416518357834055153e-1,
    2.52587186443633654823e-1,
)
_I1E_B: Final = (
    7.51729631084210481353e-18,
    4.41434832307170791151e-18,
    -4.65030536848935832153e-17,
    -3.20952592199342395980e-17,
    2.96262899764595013876e-16,
    3.30820231092092828324e-16,
    -1.88035477551078244854e-15,
    -3.81440307243700780478e-15,
    1.04202769841288027642e-14,
    4.27244001671195135429e-14,
    -2.10154184277266431302e-14,
    -4.08355111109219731823e-13,
    -7.19855177624590851209e-13,
    2.03562854414708950722e-12,
    1.41258074366137813316e-11,
    3.25260358301548823856e-11,
    -1.89749581235054123450e-11,
    -5.58974346219658380687e-10,
    -3.83538038596423702205e-9,
    -2.63146884688951950684e-8,
    -2.51223623787020892529e-7,
    -3.88256480887769039346e-6,
    -1.10588938762623716291e-4,
    -9.76109749136146840777e-3,
    7.78576235018280120474e-1,
)
#: How many of each series' last terms float32 uses (XLA's and JAX's float32 tables).
_I0E_F32_TERMS: Final = (18, 7)
_I1E_F32_TERMS: Final = (17, 7)


def _bessel_series(
    x: Array, a: Sequence[float], b: Sequence[float], terms: tuple[int, int] | None
) -> tuple[Array, Array, Array]:
    """(|x| <= 8, the [0, 8] series at |x|, the tail series at |x| already divided by sqrt|x|)."""
    t = x.dtype.type
    if terms is not None:
        a, b = a[-terms[0] :], b[-terms[1] :]
    ax = np.abs(x)
    near = _chebyshev(ax * t(0.5) + t(-2), a)
    far = _chebyshev(t(32) / ax + t(-2), b) * (t(1) / np.sqrt(ax))  # XLA: times rsqrt(|x|)
    return ax <= t(8), near, far


def _i0e(terms: tuple[int, int] | None) -> Callable[[Array], Array]:
    def f(x: Array) -> Array:
        small, near, far = _bessel_series(x, _I0E_A, _I0E_B, terms)
        return np.where(small, near, far)

    return f


def _i1e(terms: tuple[int, int] | None) -> Callable[[Array], Array]:
    def f(x: Array) -> Array:
        small, near, far = _bessel_series(x, _I1E_A, _I1E_B, terms)
        return np.sign(x) * np.where(small, np.abs(x) * near, far)

    return f


KERNELS["bessel_i0e"] = _special_unary(
    "bessel_i0e", _i0e(_I0E_F32_TERMS), _i0e(None), "exp(-|x|) I0(x), the scaled modified Bessel function of order 0."
)
KERNELS["bessel_i1e"] = _special_unary(
    "bessel_i1e", _i1e(_I1E_F32_TERMS), _i1e(None), "exp(-|x|) I1(x), the scaled modified Bessel function of order 1."
)

# -- zeta, polygamma ------------------------------------------------------------------------------

#: B_2k / (2k)! for k = 12 down to 1: the Euler-Maclaurin correction terms of the Hurwitz zeta.
_ZETA_BERNOULLI: Final = (-1.3954464685812522e-19, 5.5090028283602295e-18, -2.1748686985580617e-16,
                          8.5860620562778452e-15, -3.3896802963225832e-13, 1.3382536530684679e-11,
                          -5.2841901386874932e-10, 2.08767569878681e-08, -8.2671957671957675e-07,
                          3.3068783068783071e-05, -0.0013888888888888889, 0.083333333333333329)  # fmt: skip
_ZETA_TERMS: Final = 10  # the series' terms summed before the correction


def _zeta(x: Array, q: Array) -> Array:
    """Hurwitz zeta sum_i (q + i)**-x by Euler-Maclaurin summation, as XLA expands it."""
    t = x.dtype.type
    one = t(1)
    neg_x = -x
    acc = np.power(q, neg_x)
    for i in range(1, _ZETA_TERMS):
        acc = acc + np.power(q + t(i), neg_x)
    a = q + t(_ZETA_TERMS)
    neg_power = np.power(a, neg_x)
    s = acc + (neg_power * a) / (x - one)  # the integral of the tail, a**(1-x) / (x-1)
    inv_a2 = one / (a * a)
    b = _c(_ZETA_BERNOULLI, x.dtype)
    h = np.full_like(x, b[0])
    for j in range(len(b) - 1, 0, -1):  # factor (x + 2j - 1)(x + 2j) per term, Horner-style
        h = _fma((x + t(2 * j)) * (x + t(2 * j - 1)), inv_a2 * h, b[len(b) - j])
    s = _fma(neg_power, _fma(x / a, h, t(0.5)), s)
    tiny = t(np.finfo(x.dtype).smallest_subnormal)
    out = np.where(np.abs(neg_power) < np.abs(acc) * tiny, acc, s)
    # domain: x < 1 is NaN; q a non-positive integer is a pole (inf for even integer x, else NaN)
    nan, inf = t(np.nan), t(np.inf)
    q_int = q == np.floor(q)
    x_int = x == np.floor(x)
    out = np.where(x < one, nan, out)
    out = np.where((q <= 0) & ~x_int, nan, out)
    out = np.where((q <= 0) & q_int, np.where(x_int & (np.fmod(x, t(2)) == 0), inf, nan), out)
    return np.where(x == one, inf, out)


KERNELS["zeta"] = _special_binary("zeta", _zeta, _zeta, "The Hurwitz zeta function zeta(x, q) = sum_i (q + i)**-x.")


def _polygamma(m: Array, x: Array) -> Array:
    """(-1)**(m + 1) m! zeta(m + 1, x); digamma for m = 0; NaN unless m is a whole number >= 0."""
    t = x.dtype.type
    sign = np.fmod(m, t(2)) * t(2) + t(-1)
    n1 = m + t(1)
    out = (sign * np.exp(_lgamma(n1))) * _zeta(n1, x)
    out = np.where(m == 0, _digamma(x), out)
    return np.where((m != np.floor(m)) | (m < 0), t(np.nan), out)


KERNELS["polygamma"] = _special_binary(
    "polygamma", _polygamma, _polygamma, "The m-th derivative of digamma, polygamma(m, x) (m a whole number)."
)

# -- igamma, igammac, igamma_grad_a ----------------------------------------------------------------
# JAX's expansions (after Cephes' igam / igamc): the power series of P(a, x) for x < 1 or x <= a, the
# continued fraction of Q(a, x) elsewhere; each iterates per element until its term is below the
# dtype's epsilon (the continued fraction at most 2000 times). igamma_grad_a differentiates both in
# a alongside.


def _igamma_prefactor(a: Array, x: Array) -> tuple[Array, Array]:
    """(x**a e**-x / Gamma(a), whether its log underflows)."""
    t = x.dtype.type
    ax = a * np.log(x) - x - _lgamma(a)
    return np.exp(ax), ax < -np.log(t(np.finfo(x.dtype).max))


def _igamma_series(ax: Array, x: Array, a: Array, enabled: Array, derivative: bool) -> Array:
    t = x.dtype.type
    eps = t(np.finfo(x.dtype).eps)
    # Every element iterates on its own until its term is below eps; only the unconverged
    # ones are computed (compacted by index), which gives each element the same arithmetic.
    ans, dans_da = np.ones(a.shape, a.dtype), np.zeros(a.shape, a.dtype)  # C order: written by flat index
    at = np.flatnonzero(enabled)
    xs = x.ravel()[at]
    r, c = a.ravel()[at], np.ones(at.size, a.dtype)
    s, ds, dc_da = np.ones(at.size, a.dtype), np.zeros(at.size, a.dtype), np.zeros(at.size, a.dtype)
    while at.size:
        r = r + t(1)
        dc_da = dc_da * (xs / r) - (c * xs) / (r * r)
        ds = ds + dc_da
        c = c * (xs / r)
        s = s + c
        ans.reshape(-1)[at], dans_da.reshape(-1)[at] = s, ds
        more = (np.abs(dc_da / ds) if derivative else c / s) > eps
        at, xs, r, c, s, ds, dc_da = at[more], xs[more], r[more], c[more], s[more], ds[more], dc_da[more]
    if not derivative:
        return (ans * ax) / a
    dlogax_da = np.log(x) - _digamma(a + t(1))
    return ax * (ans * dlogax_da + dans_da) / a


def _igammac_continued_fraction(ax: Array, x: Array, a: Array, enabled: Array, derivative: bool) -> Array:
    t = x.dtype.type
    eps = t(np.finfo(x.dtype).eps)
    y0 = t(1) - a
    z0 = x + y0 + t(1)
    ans_full = np.asarray((x + t(1)) / (z0 * x), order="C")  # C order: written by flat index
    dans_full = np.asarray((np.zeros_like(x) - ans_full * -x) / (z0 * x), order="C")
    # As in the series: only the unconverged elements are computed, each with its own arithmetic.
    at = np.flatnonzero(enabled)
    y, z, xs = y0.ravel()[at], z0.ravel()[at], x.ravel()[at]
    pkm2, qkm2 = np.ones(at.size, x.dtype), xs.copy()
    pkm1, qkm1 = xs + t(1), z * xs
    ans, dans = ans_full.ravel()[at], dans_full.ravel()[at]
    dpkm2, dqkm2, dpkm1 = np.zeros((3, at.size), x.dtype)
    dqkm1 = -xs
    c = t(0)
    while at.size and c < 2000:
        c = c + t(1)
        y, z = y + t(1), z + t(2)
        yc = y * c
        pk = pkm1 * z - pkm2 * yc
        qk = qkm1 * z - qkm2 * yc
        nonzero = qk != 0
        r = pk / qk
        test = np.where(nonzero, np.abs((ans - r) / r), t(1))
        ans_n = np.where(nonzero, r, ans)
        dpk = dpkm1 * z - pkm1 - dpkm2 * yc + pkm2 * c
        dqk = dqkm1 * z - qkm1 - dqkm2 * yc + qkm2 * c
        dans_n = np.where(nonzero, (dpk - ans_n * dqk) / qk, dans)
        grad_test = np.where(nonzero, np.abs(dans_n - dans), t(1))
        k = np.where(np.abs(pk) > t(1) / eps, eps, t(1))  # rescaled: keep the convergents finite
        pkm2, qkm2, dpkm2, dqkm2 = pkm1 * k, qkm1 * k, dpkm1 * k, dqkm1 * k
        pkm1, qkm1, dpkm1, dqkm1 = pk * k, qk * k, dpk * k, dqk * k
        ans, dans = ans_n, dans_n
        ans_full.reshape(-1)[at], dans_full.reshape(-1)[at] = ans, dans
        more = (grad_test if derivative else test) > eps
        at, y, z = at[more], y[more], z[more]
        pkm1, qkm1, pkm2, qkm2 = pkm1[more], qkm1[more], pkm2[more], qkm2[more]
        dpkm1, dqkm1, dpkm2, dqkm2 = dpkm1[more], dqkm1[more], dpkm2[more], dqkm2[more]
        ans, dans = ans[more], dans[more]
    if not derivative:
        return ans_full * ax
    dlogax_da = np.log(x) - _digamma(a)
    return ax * (ans_full * dlogax_da + dans_full)


def _domain(a: Array, x: Array) -> tuple[Array, Array, Array, Array]:
    """(NaN operand or outside the domain, x == 0, x == inf, a == 0)."""
    nan = np.isnan(a) | np.isnan(x)
    x0, a0 = x == 0, a == 0
    return (x < 0) | (a < 0) | (a0 & x0) | nan, x0, x == np.inf, a0


def _igamma(a: Array, x: Array) -> Array:
    t = x.dtype.type
    bad, x0, xinf, _ = _domain(a, x)
    use_cf = (x >= t(1)) & (x > a)
    ax, underflow = _igamma_prefactor(a, x)
    enabled = ~(x0 | bad | underflow | xinf)
    out = np.where(
        use_cf,
        t(1) - _igammac_continued_fraction(ax, x, a, enabled & use_cf, False),
        _igamma_series(ax, x, a, enabled & ~use_cf, False),
    )
    out = np.where(x0, t(0), out)
    out = np.where(xinf, t(1), out)
    return np.where(bad, t(np.nan), out)


def _igammac(a: Array, x: Array) -> Array:
    t = x.dtype.type
    bad, _, xinf, a0 = _domain(a, x)
    use_series = (x < t(1)) | (x < a)
    ax, underflow = _igamma_prefactor(a, x)
    enabled = ~(bad | underflow | xinf | a0)
    out = np.where(
        use_series,
        t(1) - _igamma_series(ax, x, a, enabled & use_series, False),
        _igammac_continued_fraction(ax, x, a, enabled & ~use_series, False),
    )
    out = np.where(xinf | a0, t(0), out)
    return np.where(bad, t(np.nan), out)


def _igamma_grad_a(a: Array, x: Array) -> Array:
    t = x.dtype.type
    nan = np.isnan(a) | np.isnan(x)
    x0 = x == 0
    bad = (x < 0) | (a <= 0)
    use_cf = (x > t(1)) & (x > a)
    ax, underflow = _igamma_prefactor(a, x)
    enabled = ~(x0 | bad | underflow | nan)
    out = np.where(
        use_cf,
        -_igammac_continued_fraction(ax, x, a, enabled & use_cf, True),
        _igamma_series(ax, x, a, enabled & ~use_cf, True),
    )
    out = np.where(x0, t(0), out)
    return np.where(bad | nan, t(np.nan), out)


KERNELS["igamma"] = _special_binary(
    "igamma", _igamma, _igamma, "The regularized lower incomplete gamma function P(a, x)."
)
KERNELS["igammac"] = _special_binary(
    "igammac", _igammac, _igammac, "The regularized upper incomplete gamma function Q(a, x) = 1 - P(a, x)."
)
KERNELS["igamma_grad_a"] = _special_binary(
    "igamma_grad_a", _igamma_grad_a, _igamma_grad_a, "d P(a, x) / da, the derivative of igamma in a."
)
