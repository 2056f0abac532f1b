# SPDX-License-Identifier: MIT
"""ctypes declarations of include/rcanvas.h (the part the binding uses) and the search for librcanvas.so.

The structs mirror the C layout field by field; tests/python/test_binding.py compiles a small C program that
prints sizeof/offsetof of each and compares them with these, so a change to rcanvas.h that is not made here
fails a test instead of corrupting memory.
"""

import ctypes
import ctypes.util
import os

c_double, c_int, c_uint32, c_int32, c_int64, c_uint64, c_size_t, c_char_p, c_void_p = (
    ctypes.c_double, ctypes.c_int, ctypes.c_uint32, ctypes.c_int32, ctypes.c_int64, ctypes.c_uint64,
    ctypes.c_size_t, ctypes.c_char_p, ctypes.c_void_p)

LOG_FN = ctypes.CFUNCTYPE(None, c_void_p, c_int, c_char_p)

# The ranges of the C integer types, for refusing a Python int that ctypes would silently wrap (2**32 + 18094
# stored in a c_int is 18094).
INT_MIN, INT_MAX = -(1 << 31), (1 << 31) - 1
UINT32_MAX = (1 << 32) - 1
UINT64_MAX = (1 << 64) - 1
SIZE_MAX = (1 << (8 * ctypes.sizeof(c_size_t))) - 1


class ServerConfig(ctypes.Structure):
    _fields_ = [
        ("host", c_char_p), ("port", c_int), ("token", c_char_p), ("view_token", c_char_p),
        ("allowed_origins", ctypes.POINTER(c_char_p)), ("n_allowed_origins", c_int),
        ("allowed_hosts", ctypes.POINTER(c_char_p)), ("n_allowed_hosts", c_int),
        ("base_path", c_char_p), ("max_viewers", c_int), ("max_message_bytes", c_size_t),
        ("max_bad_messages", c_int), ("encode_threads", c_int), ("max_frame_dim", c_uint32),
        ("log", LOG_FN), ("log_user", c_void_p), ("log_level", c_int),
        ("tls_cert", c_char_p), ("tls_key", c_char_p),
        ("max_canvas_pixels", c_uint64), ("max_pixel_ratio", c_double), ("ping_ms", c_int),
        ("idle_timeout_ms", c_int),
    ]


class CanvasConfig(ctypes.Structure):
    _fields_ = [
        ("name", c_char_p), ("title", c_char_p), ("width", c_uint32), ("height", c_uint32),
        ("pixel_ratio", c_double), ("update_mode", c_int), ("max_fps", c_double), ("max_in_flight", c_int),
        ("codec", c_int), ("quality", c_int), ("subsampling", c_int), ("refine_ms", c_int),
    ]


class Frame(ctypes.Structure):
    _fields_ = [
        ("pixels", c_void_p), ("width", c_uint32), ("height", c_uint32), ("pitch", c_size_t),
        ("format", c_int), ("timestamp_us", c_int64),
    ]


class EncodedFrame(ctypes.Structure):
    _fields_ = [
        ("data", c_void_p), ("size", c_size_t), ("width", c_uint32), ("height", c_uint32), ("codec", c_int),
        ("quality", c_int), ("encoder", c_char_p),
    ]


class Size(ctypes.Structure):
    _fields_ = [
        ("width", c_double), ("height", c_double), ("pixel_ratio", c_double),
        ("physical_width", c_uint32), ("physical_height", c_uint32),
    ]


MAX_TOUCHES = 10


class Touch(ctypes.Structure):
    _fields_ = [("id", c_int32), ("x", c_double), ("y", c_double), ("pressure", c_double)]


class Event(ctypes.Structure):
    _fields_ = [
        ("type", c_int), ("time_stamp", c_double), ("server_time_us", c_int64), ("viewer_id", c_uint32),
        ("x", c_double), ("y", c_double), ("button", c_int), ("buttons", c_uint32), ("modifiers", c_uint32),
        ("ntouches", c_int), ("touches", Touch * MAX_TOUCHES), ("dx", c_double), ("dy", c_double),
        ("key", ctypes.c_char * 32), ("data", ctypes.c_char * 32),
        ("width", c_double), ("height", c_double), ("pixel_ratio", c_double),
    ]


class LibraryNotFound(OSError):
    """librcanvas.so could not be loaded from any of the places load() tries (the message names each)."""


BUNDLED = os.path.join(os.path.dirname(os.path.abspath(__file__)), "librcanvas.so")


def _candidates():
    env = os.environ.get("RCANVAS_LIBRARY")
    if env:
        yield env
        return
    # The copy `pip install ./python` built and put inside the package.
    yield BUNDLED
    # The build tree: python/rcanvas/ -> ../../build/librcanvas.so (tests, and a checkout used in place).
    here = os.path.dirname(BUNDLED)
    for build in ("build", "build-cpu"):
        yield os.path.join(here, "..", "..", build, "librcanvas.so")
    found = ctypes.util.find_library("rcanvas")
    if found:
        yield found
    yield "librcanvas.so.0"
    yield "librcanvas.so"


def load():
    """Loads librcanvas.so: $RCANVAS_LIBRARY (only that), else the copy bundled in this package (rcanvas/librcanvas.so,
    put there by `pip install ./python`), else the build tree beside this package, else the system's
    (ctypes.util.find_library). The path loaded is in the returned CDLL's _rcanvas_path. Raises LibraryNotFound
    (an OSError) naming every place tried."""
    tried = []
    for path in _candidates():
        if os.sep in path and not os.path.exists(path):
            tried.append(f"{path} (absent)")
            continue
        try:
            lib = ctypes.CDLL(path)
        except OSError as err:
            tried.append(f"{path} ({err})")
            continue
        _declare(lib)
        lib._rcanvas_path = path
        return lib
    raise LibraryNotFound(
        "cannot load librcanvas.so; tried: " + "; ".join(tried) + ". Install the package with its own copy "
        "(in the rcanvas checkout: `pip install --no-build-isolation ./python`, which builds it with CMake), set "
        "RCANVAS_LIBRARY to the path of a librcanvas.so, or build it (make build).")


def _declare(lib):
    P = ctypes.POINTER
    sigs = {
        "rcanvas_strerror": (c_char_p, [c_int]),
        "rcanvas_err_name": (c_char_p, [c_int]),
        "rcanvas_codec_name": (c_char_p, [c_int]),
        "rcanvas_codec_from_name": (c_int, [c_char_p]),
        "rcanvas_option_name": (c_char_p, [c_int]),
        "rcanvas_option_from_name": (c_int, [c_char_p]),
        "rcanvas_encoder_name": (c_char_p, [c_int]),
        "rcanvas_canvas_set_encoder": (c_int, [c_void_p, c_char_p]),
        "rcanvas_canvas_encoder": (c_char_p, [c_void_p]),
        "rcanvas_server_config_init": (None, [P(ServerConfig)]),
        "rcanvas_server_new": (c_int, [P(ServerConfig), P(c_void_p)]),
        "rcanvas_server_free": (None, [c_void_p]),
        "rcanvas_server_port": (c_int, [c_void_p]),
        "rcanvas_server_token": (c_char_p, [c_void_p]),
        "rcanvas_server_view_token": (c_char_p, [c_void_p]),
        "rcanvas_server_url": (c_int, [c_void_p, c_char_p, c_char_p, c_size_t]),
        "rcanvas_server_view_url": (c_int, [c_void_p, c_char_p, c_char_p, c_size_t]),
        "rcanvas_server_session_url": (c_int, [c_void_p, c_char_p, c_int, c_char_p, c_size_t]),
        "rcanvas_canvas_config_init": (None, [P(CanvasConfig)]),
        "rcanvas_canvas_new": (c_int, [c_void_p, P(CanvasConfig), P(c_void_p)]),
        "rcanvas_canvas_free": (None, [c_void_p]),
        "rcanvas_canvas_set_title": (c_int, [c_void_p, c_char_p]),
        "rcanvas_canvas_set_cursor": (c_int, [c_void_p, c_char_p]),
        "rcanvas_canvas_set_codec": (c_int, [c_void_p, c_int, c_int, c_int]),
        "rcanvas_canvas_set_option": (c_int, [c_void_p, c_int, c_int]),
        "rcanvas_canvas_get_option": (c_int, [c_void_p, c_int, P(c_int)]),
        "rcanvas_canvas_get_size": (None, [c_void_p, P(Size)]),
        "rcanvas_canvas_viewer_count": (c_int, [c_void_p]),
        "rcanvas_present": (c_int, [c_void_p, P(Frame)]),
        "rcanvas_present_encoded": (c_int, [c_void_p, P(EncodedFrame)]),
        "rcanvas_present_pixels": (c_int, [c_void_p, P(Frame)]),
        "rcanvas_wait": (c_int, [c_void_p, c_int]),
        "rcanvas_request_draw": (None, [c_void_p]),
        "rcanvas_poll_event": (c_int, [c_void_p, P(Event)]),
        "rcanvas_event_type_name": (c_char_p, [c_int]),
        "rcanvas_log_queue_new": (c_int, [c_int, P(c_void_p)]),
        "rcanvas_log_queue_pop": (c_int, [c_void_p, c_int, P(c_int), c_char_p, c_size_t, P(c_uint64)]),
        "rcanvas_log_queue_close": (None, [c_void_p]),
    }
    for name, (res, args) in sigs.items():
        fn = getattr(lib, name)
        fn.restype = res
        fn.argtypes = args
