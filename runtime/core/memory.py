"""A cache of large kernel output buffers, reused instead of handed back to the OS.

Each eager op allocates its result. For large arrays the C allocator maps fresh
pages from the OS and unmaps them when they are freed, so a program that keeps
many large intermediates alive (a forward pass saved for its backward pass)
pays a page fault for every page, on every call: on a virtual machine that is
most of an elementwise kernel's time. Like PyTorch's CUDA caching allocator,
castwise keeps the memory of freed large results and gives it to the next
result of the same size.

Only results of at least ``POOL_MIN_BYTES`` are cached; smaller ones come from
``np.empty`` (the C allocator reuses those without page faults). A cached
result is an ordinary writable, C-contiguous, 64-byte aligned NumPy array whose
``base`` is the cache's ``bytearray``. Its memory is reused only when nothing
outside the cache can reach it: the last array viewing it is gone (a weakref
callback on the array NumPy's views keep alive) and nobody holds the
``bytearray`` itself (its reference count, checked before reuse). The cache
keeps a buffer export of each ``bytearray``, so it cannot be resized under a
live array.

At most ``cache_limit()`` bytes of idle memory are kept (default 256 MiB;
``set_cache_limit(0)`` turns caching off); ``empty_cache()`` releases them all.
"""

from __future__ import annotations

import math
import os
import sys
import threading
import weakref
from dataclasses import dataclass
from typing import Any, Final

import numpy as np

#: Results smaller than this come from ``np.empty``: glibc serves them from its heap without page faults.
POOL_MIN_BYTES = 128 * 1024
#: Cached arrays start on a cache-line boundary (NumPy's own are only 16-byte aligned).
_ALIGN = 64
_DEFAULT_LIMIT = 256 * 1024 * 1024


@dataclass(frozen=True)
class CacheInfo:
    """A snapshot of the buffer cache."""

    #: bytes of idle memory held for reuse
    idle_bytes: int
    #: bytes handed out to arrays that are still alive
    live_bytes: int
    #: the most idle memory the cache keeps
    limit: int
    #: results served from idle memory / with new memory
    hits: int
    misses: int


class _Cache:
    def __init__(self) -> None:
        # RLock: the weakref callback can run inside ``empty`` (a collection it triggers)
        self.lock = threading.RLock()
        self.idle: dict[int, list[_Block]] = {}  # size -> idle memory of that size
        self.idle_bytes = 0
        self.live: dict[int, tuple[weakref.ref[np.ndarray], _Block, int]] = {}
        self.live_bytes = 0
        self.limit = _DEFAULT_LIMIT
        self.hits = 0
        self.misses = 0

    def release(self, ref: weakref.ref[np.ndarray]) -> None:
        """The weakref callback: the array is gone, its memory becomes idle (or is dropped)."""
        _, block, size = self.live.pop(id(ref))
        with self.lock:
            self.live_bytes -= size
            if self.idle_bytes + size <= self.limit:
                bucket = self.idle.get(size)
                if bucket is None:
                    bucket = self.idle[size] = []
                bucket.append(block)
                self.idle_bytes += size


#: (memory, a buffer export of it that keeps it from being resized, the offset of its first aligned byte)
_Block = tuple[bytearray, memoryview, int]

_CACHE = _Cache()


def _after_fork_in_child() -> None:
    # Another thread may have held the lock at the fork: the child starts with a fresh one
    # (its idle memory is the child's own copy, still valid to reuse).
    _CACHE.lock = threading.RLock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def _new_block(size: int) -> _Block:
    memory = bytearray(size + _ALIGN)
    pin = memoryview(memory)
    address = np.frombuffer(pin, np.uint8).ctypes.data
    return memory, pin, -address % _ALIGN


def _unreferenced(memory: bytearray) -> int:
    # references to an idle block's memory while ``empty`` looks at it: the local name,
    # the pinning memoryview, and the call's argument
    return sys.getrefcount(memory)


def _calibrate() -> int:
    memory, _pin, _ = _new_block(0)
    return _unreferenced(memory)


#: what ``_unreferenced`` gives for memory nothing outside the cache holds
_FREE: Final = _calibrate()


def empty(shape: tuple[int, ...], dtype: np.dtype[Any]) -> np.ndarray:
    """An uninitialised C-contiguous array: cached memory when it is large, else ``np.empty``."""
    size = dtype.itemsize * math.prod(shape)
    cache = _CACHE
    if size < POOL_MIN_BYTES or size > cache.limit:  # (a limit of 0 turns caching off)
        return np.empty(shape, dtype)
    block: _Block | None = None
    with cache.lock:  # only the cache's books need it: the array is made outside
        bucket = cache.idle.get(size)
        while bucket:
            memory, pin, offset = bucket.pop()
            cache.idle_bytes -= size
            if _unreferenced(memory) == _FREE:
                block = memory, pin, offset
                break
            # somebody kept the bytearray itself (an array's ``base``): it stays theirs
    if block is None:
        try:
            block = _new_block(size)
        except MemoryError:
            return np.empty(shape, dtype)  # NumPy's own allocation, and its message if that fails too
        hit = False
    else:
        hit = True
    # The array's base is the bytearray (not an ndarray), so NumPy's views of it keep
    # *it* alive: the callback runs only once no view of this memory is left.
    out = np.ndarray(shape, dtype, buffer=block[0], offset=block[2])
    ref = weakref.ref(out, cache.release)
    with cache.lock:
        cache.live[id(ref)] = (ref, block, size)
        cache.live_bytes += size
        if hit:
            cache.hits += 1
        else:
            cache.misses += 1
    return out


def empty_like_broadcast(x: np.ndarray, y: np.ndarray, dtype: np.dtype[Any] | None = None) -> np.ndarray | None:
    """An output for a binary ufunc on ``x`` and ``y`` (of ``x``'s dtype unless given)
    when it is large enough to cache, else ``None`` (the ufunc allocates its own)."""
    if x.nbytes < POOL_MIN_BYTES and y.nbytes < POOL_MIN_BYTES:
        return None
    if dtype is None and x.dtype != y.dtype:
        return None  # the ufunc's own type resolution decides (kernels never get mixed dtypes)
    if x.shape == y.shape or y.ndim == 0:
        shape = x.shape
    elif x.ndim == 0:
        shape = y.shape
    else:
        shape = np.broadcast_shapes(x.shape, y.shape)
    return empty(shape, x.dtype if dtype is None else dtype)


def cache_info() -> CacheInfo:
    """How much memory the cache holds and hands out, and how often it was reused."""
    cache = _CACHE
    with cache.lock:
        return CacheInfo(cache.idle_bytes, cache.live_bytes, cache.limit, cache.hits, cache.misses)


def cache_limit() -> int:
    """The most idle memory (bytes) the cache keeps for reuse."""
    return _CACHE.limit


def set_cache_limit(nbytes: int) -> None:
    """Keep at most ``nbytes`` of idle memory (0 turns caching off); idle memory
    beyond the new limit is released now."""
    if isinstance(nbytes, bool) or not isinstance(nbytes, int) or nbytes < 0:
        raise ValueError(f"set_cache_limit: expected a byte count >= 0, got {nbytes!r}")
    cache = _CACHE
    with cache.lock:
        cache.limit = nbytes
        for size in sorted(cache.idle, reverse=True):
            bucket = cache.idle[size]
            while bucket and cache.idle_bytes > nbytes:
                bucket.pop()
                cache.idle_bytes -= size
            if not bucket:
                del cache.idle[size]


def empty_cache() -> None:
    """Release every idle buffer to the C allocator (arrays still alive are untouched)."""
    cache = _CACHE
    with cache.lock:
        cache.idle.clear()
        cache.idle_bytes = 0
