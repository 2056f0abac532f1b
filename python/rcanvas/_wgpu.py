# SPDX-License-Identifier: MIT
"""The wgpu context of rcanvas.rendercanvas' canvases: wgpu programs (pygfx, fastplotlib) render into a texture
this context owns; each frame is copied on the GPU into one of a ring of mapped-readable buffers (bytes_per_row
padded to 256, as wgpu requires) and, once mapped, its memory goes straight to rcanvas_present() with the padded
row pitch: one CPU copy per frame, rcanvas' own into its frame slot, after which the buffer is unmapped at once.
rendercanvas' own fallback for bitmap canvases (WgpuContextToBitmap) copies the mapped rows into a new numpy
array first, which rcanvas then copies again.

When a frame reaches rcanvas, per frame (RCANVAS_WGPU_PRESENT=auto, the default):

  newest first  the draw waits for this frame's readback, which is presented the moment it is mapped (rendercanvas'
                scheduler starts the next draw only then): the lowest latency, what a viewer that waits for the
                frame wants. Chosen while rcanvas granted this draw at once (a viewer had room: no frame of its
                max_in_flight was held up in the encoder or the network) and the readback is a small part of the
                frame time.
  one behind    the draw returns at once with the previous frame's buffer (waited for, if its readback is not done
                yet) while this frame's readback runs; this frame goes out when it is mapped (a callback in the
                loop, when the loop is free) or with the next draw, whichever comes first. The app renders frame
                N+1 while frame N is read back: throughput, at up to one frame of latency. Chosen while the
                readback took a large part of the frame time (the GPU is the bottleneck) or rcanvas held the draw
                back (the encoder or the viewer is).

For INPUT_NEWEST_S after a viewer's input (a click, a drag, the wheel, a key: the canvas calls note_input), auto
goes newest first whatever the rule says: someone is waiting for the picture to answer. On an H100 (pygfx's cube,
docs/benchmarks.md) one behind shows 10 % more frames at 1080p but takes 43 ms instead of 28 ms from a click to its
picture (4K: 117 against 85 ms): a frame of latency, and with jpeg-wgpu up to JPEG_ENCODERS of them.

RCANVAS_WGPU_PRESENT=newest or =behind fixes the mode (and, unless the codec is "jpeg-wgpu", reads every frame back
whole instead of jpeg-wgpu below); =bitmap makes the canvas use rendercanvas' own fallback
instead of this context (for comparison: make bench-wgpu, docs/benchmarks.md).

jpeg-wgpu: where the canvas streams JPEG (codec "jpeg", the default, on a GPU; codec "jpeg-wgpu" to ask for it) the
frame is JPEG-encoded on the device the app renders with (rcanvas.jpeg_wgpu, reading the texture itself) at the
quality rcanvas' rate adaptation asks for (Canvas.live_quality), and only the file's bytes are read back: the length
first, then that many bytes. rcanvas sends them as they are (rcanvas_present_encoded). Where it cannot (a viewer
needs another codec or a smaller frame, a frame small enough to go lossless) this frame is read back whole through
the ring after all, and the next JPEG_RETRY_FRAMES frames go that way before the encoder is tried again. The pixels
of a frame sent as JPEG are read back only when rcanvas asks for them (the lossless refinement once the picture is
still: RCANVAS_WAKE_PIXELS), from the texture, which still holds that frame unless a newer one was drawn. These
frames go newest first or one behind by the same rule as the ring's (one behind: JPEG_ENCODERS encoders take turns,
and the app draws the next frame while the last file is read back). The chroma follows rcanvas' AUTO rule, measured
on the GPU beside each encode for the next frame. On a CPU device (lavapipe) it runs only with
RCANVAS_GPU_CODEC_DEVICE=any (as h264-gpu): there the CPU encoders are faster.
"""

import os
import time

import numpy as np
from rendercanvas.contexts import WgpuContext

MODES = ("auto", "newest", "behind")
RING = 3  # buffers: one being presented, one being read back, one for the frame being drawn
JPEG_RETRY_FRAMES = 30  # frames through the ring after rcanvas could not take one encoded, before trying again
INPUT_NEWEST_S = 0.5  # newest first this long after a viewer's input
JPEG_ENCODERS = 3  # jpeg-wgpu encodes in flight at most (one behind: the next frames' draws overlap them)


def jpeg_wgpu_allowed(device):
    """(True, "") where jpeg-wgpu may run on `device`, else (False, why): a CPU device (lavapipe, llvmpipe) only
    with RCANVAS_GPU_CODEC_DEVICE=any."""
    try:
        kind = str(device.adapter.info.get("adapter_type", ""))
    except Exception:  # noqa: BLE001 — an adapter without info: take it as a GPU
        kind = ""
    if kind.upper() == "CPU" and os.environ.get("RCANVAS_GPU_CODEC_DEVICE", "").strip().lower() != "any":
        return False, (f"the wgpu device is a CPU ({device.adapter.info.get('device', '?')}): rcanvas' CPU JPEG "
                       f"encoder is faster there (RCANVAS_GPU_CODEC_DEVICE=any runs jpeg-wgpu anyway)")
    return True, ""


def present_mode():
    """The mode of RCANVAS_WGPU_PRESENT: "auto" (default), "newest", "behind", or "bitmap" (rendercanvas' fallback)."""
    m = os.environ.get("RCANVAS_WGPU_PRESENT", "auto").strip().lower() or "auto"
    if m not in MODES + ("bitmap",):
        raise ValueError(f"RCANVAS_WGPU_PRESENT must be auto, newest, behind or bitmap, not {m!r}")
    return m


class MappedFrame:
    """A frame in a mapped readback buffer: what RcanvasWgpuContext hands to the canvas's _rc_present_bitmap (as
    `data`). address, width, height, pitch (bytes a row, a multiple of 256), format ("rgba" or "bgra"). Valid until
    done() is called, which unmaps the buffer: call it once rcanvas has copied the pixels."""

    __slots__ = ("address", "width", "height", "pitch", "format", "_slot")

    def __init__(self, slot):
        self._slot = slot
        self.address, self.width, self.height, self.pitch = slot.address, slot.width, slot.height, slot.pitch
        self.format = slot.format

    def done(self):
        slot, self._slot = self._slot, None
        if slot is not None:
            slot.release()

    def __array__(self, dtype=None, copy=None):
        # A copy (never a view: the memory is unmapped after the present): for code that wants an ndarray.
        if self._slot is None:
            raise ValueError("this frame's buffer is unmapped")
        mv = self._slot.buffer.read_mapped(0, self.pitch * self.height, copy=True)
        a = np.frombuffer(mv, np.uint8).reshape(self.height, self.pitch)[:, :self.width * 4]
        return a.reshape(self.height, self.width, 4).copy()


class _Slot:
    """One buffer of the ring and the frame in it: idle → reading (copy submitted, map requested) → mapped → idle
    (unmapped once presented, or once a newer frame was presented)."""

    __slots__ = ("buffer", "nbytes", "state", "seq", "promise", "address", "width", "height", "pitch", "format",
                 "t_submit", "t_mapped")

    def __init__(self):
        self.buffer = None
        self.nbytes = 0
        self.state = "idle"
        self.seq = 0
        self.promise = None
        self.address = 0
        self.width = self.height = self.pitch = 0
        self.format = "rgba"
        self.t_submit = self.t_mapped = 0.0

    def on_mapped(self):
        # The map is done (in the loop's thread, or after a sync_wait): the mapped memory's address, taken through
        # a numpy array that is dropped at once, so that nothing holds an export of wgpu's memoryview when unmap()
        # releases it.
        if self.state != "reading":
            return
        self.t_mapped = time.perf_counter()
        mv = self.buffer.read_mapped(0, self.nbytes, copy=False)
        self.address = np.frombuffer(mv, np.uint8).ctypes.data
        del mv
        self.state = "mapped"

    def release(self):
        if self.state == "mapped":
            self.buffer.unmap()
        self.state = "idle"
        self.promise = None
        self.address = 0


class RcanvasWgpuContext(WgpuContext):
    """A WgpuContext whose frames go from wgpu's mapped readback buffers to rcanvas without a copy in Python (see
    the module's doc). present_info carries "rcanvas_present": a callable taking a present result's keyword
    arguments (the canvas's _rc_present_bitmap), for the frames presented outside rendercanvas' present (the
    one-behind mode's frames mapped before the next draw); "rcanvas_draw_wait": a callable giving the seconds the
    last draw waited for rcanvas' flow control; "rcanvas_mode" (optional): the mode, else RCANVAS_WGPU_PRESENT."""

    present_methods = ["bitmap"]

    def __init__(self, present_info):
        super().__init__(present_info)
        self._mode = present_info.get("rcanvas_mode") or present_mode()
        self._present_cb = present_info.get("rcanvas_present")
        self._draw_wait = present_info.get("rcanvas_draw_wait") or (lambda: 0.0)
        # jpeg-wgpu (the module's doc): "rcanvas_jpeg" is "on" (asked for), "auto" (the canvas streams JPEG) or
        # absent; "rcanvas_live_quality" a callable giving the quality to code at (0: rcanvas wants pixels)
        self._jpeg_mode = present_info.get("rcanvas_jpeg")
        self._live_quality = present_info.get("rcanvas_live_quality") or (lambda: 0)
        # the canvas's chroma subsampling: "420", "444" or "auto" (rcanvas' AUTO rule, measured on the GPU with each
        # frame: the next frame is coded as it says, _ss_auto)
        self._subsampling = present_info.get("rcanvas_subsampling") or (lambda: "auto")
        self._ss_auto = "420"
        self._jpeg_ok = None  # decided on the first frame, on the configured device
        self._jpeg_pool = []  # JPEG_ENCODERS encoders sharing their pipelines
        self._jpeg_flight = []  # the _JpegFrame jobs submitted and not yet mapped, oldest first
        self._jpeg_skip = 0
        self._jpeg_fresh = False  # the texture holds the frame rcanvas last took as JPEG (its pixels may be asked)
        self._drawn_seq = 0
        self._texture = None
        self._slots = [_Slot() for _ in range(RING)]
        self._seq = 0  # frames submitted
        self._presented = 0  # the newest frame handed to rcanvas
        self._readback_s = 0.0  # moving average: submit → mapped
        self._frame_s = 0.0  # moving average: present → present
        self._t_last = 0.0
        self._t_input = -1e9  # perf_counter of the last input from a viewer (note_input)
        # counters, for tests and the benchmark: frames by mode, and bytes copied by the CPU in this process
        # ("behind_held": rcanvas held the draw; "behind_gpu": the readback was over a quarter of the frame time;
        # "newest_input": newest first because a viewer's input came within INPUT_NEWEST_S)
        # jpeg-wgpu: "jpeg" frames taken as JPEG, "jpeg_not_used" read back whole after rcanvas could not take
        # them, "pixels_asked" frames whose pixels rcanvas asked for later; "gpu_bytes_read": bytes mapped from
        # the GPU (both ways)
        self.stats = {"newest": 0, "behind": 0, "behind_held": 0, "behind_gpu": 0, "newest_input": 0,
                      "presented": 0, "dropped": 0,
                      "cpu_bytes_copied": 0, "python_bytes_copied": 0, "jpeg": 0, "jpeg_not_used": 0,
                      "pixels_asked": 0, "gpu_bytes_read": 0, "jpeg_newest": 0, "jpeg_behind": 0, "jpeg_waited": 0,
                      "jpeg_420": 0, "jpeg_444": 0,
                      "jpeg_why_not": ""}

    # %% WgpuContext

    def _get_preferred_format(self, adapter):
        return "rgba8unorm-srgb"  # as rendercanvas' bitmap contexts: the bytes as shown (the page is sRGB)

    def _configure(self, config):
        fmt = config["format"]
        if fmt not in ("rgba8unorm-srgb", "rgba8unorm", "bgra8unorm-srgb", "bgra8unorm"):
            raise ValueError(f"Configure: unsupported texture format {fmt} (rcanvas takes rgba8unorm(-srgb) and "
                             f"bgra8unorm(-srgb))")
        for vf in config["view_formats"]:
            if vf not in ("rgba8unorm-srgb", "rgba8unorm", "bgra8unorm-srgb", "bgra8unorm"):
                raise ValueError(f"Configure: unsupported view format {vf}")
        if config["alpha_mode"] != "opaque":
            raise ValueError(f"Configure: unsupported alpha-mode {config['alpha_mode']} (frames are shown opaque)")
        self._drop_all()

    def _unconfigure(self):
        self._drop_all()

    def _get_current_texture(self):
        import wgpu

        w, h = self.physical_size
        size = (max(1, w), max(1, h), 1)
        self._jpeg_fresh = False  # a new frame is drawn into it
        self._drawn_seq = self._seq + 1  # the frame the next present will carry
        if self._texture is None or self._texture.size != size:
            # One texture is enough: the copy out of it is queued before the next frame's render pass, and the
            # queue runs in order (wgpu puts the barrier between them).
            self._texture = self._config["device"].create_texture(
                label="rcanvas-present", size=size, format=self._config["format"],
                usage=self._config["usage"] | wgpu.TextureUsage.COPY_SRC | wgpu.TextureUsage.TEXTURE_BINDING)
        return self._texture

    def _rc_present(self, *, force_sync=False):
        if self._texture is None:
            return {"method": "skip"}
        if not force_sync and self._jpeg_wanted():
            q = self._live_quality()
            if q > 0:
                return self._present_jpeg(q)
        slot = self._submit()
        behind = self._choose(force_sync)
        self.stats["behind" if behind else "newest"] += 1
        if force_sync:
            slot.promise.sync_wait()
            slot.on_mapped()
            return self._result(slot)
        if not behind:
            return {"method": "async", "awaitable": _Newest(self, slot)}
        # one behind: this frame goes out when it is mapped, or with the next draw
        slot.promise.then(lambda _r, s=slot, q=slot.seq: self._flush(s, q))
        prev = self._slot_of(slot.seq - 1)
        if prev is None:
            return {"method": "skip"}  # presented already (mapped before this draw), or none
        if prev.state == "reading":
            prev.promise.sync_wait()  # the GPU is behind: this draw waits for the previous readback
            prev.on_mapped()
        return self._result(prev)

    def _rc_close(self):
        self._drop_all()

    # %% jpeg-wgpu

    def _jpeg_wanted(self):
        if not self._jpeg_mode or (self._jpeg_mode == "auto" and self._mode != "auto"):
            return False  # not JPEG, or a ring mode fixed by RCANVAS_WGPU_PRESENT (codec "jpeg-wgpu" still wins)
        if self._jpeg_ok is None:
            ok, why = jpeg_wgpu_allowed(self._config["device"])
            self._jpeg_ok, self.stats["jpeg_why_not"] = ok, why
            if not ok and self._jpeg_mode == "on":
                import logging

                logging.getLogger("rcanvas").warning("jpeg-wgpu: %s; JPEG is encoded on the CPU", why)
        if not self._jpeg_ok:
            return False
        if self._jpeg_skip > 0:
            self._jpeg_skip -= 1
            return False
        return True

    def _present_jpeg(self, quality):
        """This frame JPEG-encoded on the device. Newest first: the draw's present waits for the file (an awaitable).
        One behind: the present returns at once and the file goes out when it is mapped (through the present
        callback), so the app draws the next frame meanwhile; JPEG_ENCODERS encoders take turns, and a draw that
        finds them all busy waits for the oldest (the texture still holds its frame: the next draw waits too)."""
        from rcanvas.jpeg_wgpu import JpegWgpuEncoder

        dev = self._config["device"]
        if not self._jpeg_pool or self._jpeg_pool[0].device is not dev:
            first = JpegWgpuEncoder(dev)
            self._jpeg_pool = [first] + [first.sibling() for _ in range(JPEG_ENCODERS - 1)]
            self._jpeg_flight = []
        self._seq += 1
        seq, tex = self._seq, self._texture
        behind = self._choose(False) if self._mode == "auto" else self._mode == "behind"
        self.stats["jpeg_behind" if behind else "jpeg_newest"] += 1
        ss = self._subsampling()
        job = _JpegFrame(self, seq, tex.size[0], tex.size[1], quality, hand=behind,
                         subsampling=self._ss_auto if ss == "auto" else ss, measure=ss == "auto")
        free = [e for e in self._jpeg_pool if not e._busy]
        if free:
            if not job.start(free[0], tex):
                return self._sync_result()
            if behind:
                return {"method": "skip"}  # it goes out when mapped (_JpegFrame._resolve → _hand_jpeg)
            return {"method": "async", "awaitable": job}
        # every encoder is busy: this draw waits for the oldest encode, then this frame's starts on its encoder
        oldest = self._jpeg_flight[0]
        job.hand = True
        gate = _Gate()
        oldest.on_done.append(lambda enc: (job.start(enc, tex) or job.fail_now(), gate.open()))
        self.stats["jpeg_waited"] += 1
        return {"method": "async", "awaitable": gate}

    def _sync_result(self):
        # this frame read back whole through the ring, waited for (the texture still holds it)
        slot = self._submit()
        slot.promise.sync_wait()
        slot.on_mapped()
        return self._result(slot)

    def _jpeg_taken(self, ok, nbytes_read, seq):
        self.stats["gpu_bytes_read"] += nbytes_read
        if ok:
            self.stats["jpeg"] += 1
            self.stats["presented"] += 1
            self._presented = max(self._presented, seq)
            self._jpeg_fresh = seq == self._seq and self._drawn_seq == seq  # no newer frame drawn into the texture
        else:
            self.stats["jpeg_not_used"] += 1
            self._jpeg_skip = JPEG_RETRY_FRAMES

    def _rc_pixels(self, present_pixels):
        """rcanvas asked for the pixels of the frame it took as JPEG (RCANVAS_WAKE_PIXELS): read the texture back
        and hand them over with present_pixels(address, width, height, pitch, format), unless a newer frame was
        drawn into it meanwhile (that one is presented anyway)."""
        if not self._jpeg_fresh or self._texture is None:
            return False
        self.stats["pixels_asked"] += 1
        slot = self._submit()
        try:
            slot.promise.sync_wait()
            slot.on_mapped()
            self.stats["gpu_bytes_read"] += slot.nbytes
            self.stats["cpu_bytes_copied"] += slot.width * slot.height * 4
            return present_pixels(slot.address, slot.width, slot.height, slot.pitch, slot.format)
        finally:
            slot.release()
            self._presented = max(self._presented, slot.seq)

    # %% the ring

    def _slot_of(self, seq):
        for s in self._slots:
            if s.seq == seq and s.state in ("reading", "mapped") and seq > self._presented:
                return s
        return None

    def _free_slot(self):
        # An idle buffer; else the oldest frame's, waited for and dropped (or presented, if it is newer than the
        # last presented frame: frames are never presented out of order, and never skipped while one is waiting).
        idle = [s for s in self._slots if s.state == "idle"]
        if idle:
            return idle[0]
        old = min(self._slots, key=lambda s: s.seq)
        if old.state == "reading":
            old.promise.sync_wait()
            old.on_mapped()
        if old.seq > self._presented:
            self._hand(old)
        else:
            old.release()
            self.stats["dropped"] += 1
        return old

    def _submit(self):
        import wgpu

        device = self._config["device"]
        tex = self._texture
        w, h = tex.size[0], tex.size[1]
        pitch = (w * 4 + 255) // 256 * 256  # wgpu's bytes_per_row: a multiple of 256, passed on as the pitch
        slot = self._free_slot()
        if slot.buffer is None or slot.nbytes != pitch * h:
            if slot.buffer is not None:
                slot.buffer.destroy()
            slot.buffer = device.create_buffer(label="rcanvas-readback", size=pitch * h,
                                               usage=wgpu.BufferUsage.COPY_DST | wgpu.BufferUsage.MAP_READ)
            slot.nbytes = pitch * h
        slot.width, slot.height, slot.pitch = w, h, pitch
        slot.format = "bgra" if tex.format.startswith("bgra") else "rgba"
        enc = device.create_command_encoder()
        enc.copy_texture_to_buffer({"texture": tex, "mip_level": 0, "origin": (0, 0, 0)},
                                   {"buffer": slot.buffer, "offset": 0, "bytes_per_row": pitch, "rows_per_image": h},
                                   (w, h, 1))
        device.queue.submit([enc.finish()])
        self._seq += 1
        slot.seq = self._seq
        slot.state = "reading"
        slot.t_submit = time.perf_counter()
        slot.promise = slot.buffer.map_async(wgpu.MapMode.READ, 0, slot.nbytes)
        return slot

    def note_input(self):
        """A viewer's input event (pointer, wheel, key) reached the app: newest first for INPUT_NEWEST_S. Called
        in the loop's thread, as the draws are."""
        self._t_input = time.perf_counter()

    def _choose(self, force_sync):
        """True for one behind, False for newest first (module doc)."""
        if self._mode != "auto":
            return self._mode == "behind"
        if force_sync:
            return False
        now = time.perf_counter()
        if self._t_last:
            dt = now - self._t_last
            self._frame_s = dt if not self._frame_s else 0.9 * self._frame_s + 0.1 * dt
        self._t_last = now
        if now - self._t_input < INPUT_NEWEST_S:
            self.stats["newest_input"] += 1
            return False  # a viewer's input waits for its picture: latency first
        if self._draw_wait() > max(0.004, 0.25 * self._frame_s):
            self.stats["behind_held"] += 1
            return True  # rcanvas held this draw back: the encoder or the viewer is the bottleneck
        if self._frame_s > 0 and self._readback_s > 0.25 * self._frame_s:
            self.stats["behind_gpu"] += 1
            return True  # the readback is a large part of the frame: the next frame's work overlaps it
        return False

    def _note_readback(self, slot):
        if slot.t_mapped and slot.t_submit:
            dt = slot.t_mapped - slot.t_submit
            self._readback_s = dt if not self._readback_s else 0.9 * self._readback_s + 0.1 * dt

    def _result(self, slot):
        self._note_readback(slot)
        self._presented = max(self._presented, slot.seq)
        # drop older frames still in the ring (a newer frame goes out: they never will)
        for s in self._slots:
            if s is not slot and s.seq < slot.seq and s.state == "mapped":
                self.stats["gpu_bytes_read"] += s.nbytes  # read back, never sent
                s.release()
                self.stats["dropped"] += 1
        self.stats["presented"] += 1
        self.stats["gpu_bytes_read"] += slot.nbytes
        self.stats["cpu_bytes_copied"] += slot.width * slot.height * 4  # rcanvas' copy, in C
        fmt = "bgra-u8" if slot.format == "bgra" else "rgba-u8"
        return {"method": "bitmap", "format": fmt, "data": MappedFrame(slot)}

    def _hand(self, slot):
        # A frame presented outside rendercanvas' present (ring full, or a one-behind frame that was mapped first).
        result = self._result(slot)
        result.pop("method")
        try:
            if self._present_cb is not None:
                self._present_cb(**result)
        finally:
            result["data"].done()

    def _flush(self, slot, seq):
        # One behind: the frame is mapped; out it goes, unless a newer frame went out meanwhile or the slot was reused.
        if slot.seq != seq or slot.state != "reading":
            return
        slot.on_mapped()
        if seq > self._presented:
            self._hand(slot)
        else:  # a newer frame went out first (the next one, newest first): this one never will
            slot.release()
            self.stats["dropped"] += 1

    def _drop_all(self):
        for s in self._slots:
            if s.state == "mapped":
                s.buffer.unmap()
            if s.buffer is not None:
                try:
                    s.buffer.destroy()  # a pending map is cancelled
                except Exception:
                    pass
            s.__init__()
        if self._texture is not None:
            try:
                self._texture._release()  # not destroy(): a command buffer in flight may still use it
            except Exception:
                pass
            self._texture = None


class EncodedJpeg:
    """A frame JPEG-encoded on the GPU (jpeg-wgpu): what RcanvasWgpuContext hands to the canvas's
    _rc_present_bitmap (as `data`). jpeg (bytes), width, height, quality. The canvas calls taken(True) once rcanvas
    took it, or present_pixels(present_address) when rcanvas could not: the frame is then read back whole."""

    __slots__ = ("jpeg", "width", "height", "quality", "_ctx", "_read", "_seq")

    def __init__(self, ctx, jpeg, width, height, quality, nbytes_read, seq):
        self._ctx, self.jpeg, self.width, self.height, self.quality = ctx, jpeg, width, height, quality
        self._read, self._seq = nbytes_read, seq

    def taken(self):
        self._ctx._jpeg_taken(True, self._read, self._seq)

    def present_pixels(self, present_address):
        ctx = self._ctx
        ctx._jpeg_taken(False, self._read, self._seq)
        if ctx._drawn_seq != self._seq:  # one behind: the texture holds a newer frame, which goes out soon
            return
        frame = ctx._sync_result()["data"]
        try:
            present_address(frame.address, frame.width, frame.height, frame.pitch, frame.format)
        finally:
            frame.done()


class _Gate:
    """An awaitable that resolves (with a skipped present) once open() is called."""

    def __init__(self):
        self._callbacks, self._open = [], False

    def then(self, callback):
        if self._open:
            callback({"method": "skip"})
        else:
            self._callbacks.append(callback)

    def open(self):
        self._open = True
        cbs, self._callbacks = self._callbacks, []
        for cb in cbs:
            cb({"method": "skip"})


class _JpegFrame:
    """One frame's jpeg-wgpu encode. Newest first it is the present's awaitable: then(callback) gets the present
    result once the file is mapped (or, when the encode failed, the frame read back whole). One behind (hand) it
    presents itself through the context's present callback when mapped, unless a newer frame went out first.
    on_done: callables given the encoder once it is free again."""

    def __init__(self, ctx, seq, w, h, quality, hand, subsampling="420", measure=False):
        self._ctx, self.seq, self._w, self._h, self._q, self.hand = ctx, seq, w, h, quality, hand
        self._ss, self._measure = subsampling, measure
        self._callbacks, self.on_done, self._enc = [], [], None

    def start(self, enc, tex):
        ctx = self._ctx
        try:
            pending = enc.submit(tex, quality=self._q, subsampling=self._ss, measure_chroma=self._measure)
        except Exception as e:  # noqa: BLE001 — e.g. past the device's buffer limits: the ring from now on
            ctx._jpeg_ok, ctx.stats["jpeg_why_not"] = False, f"the encoder refused the frame: {e}"
            return False
        self._enc = enc
        self._t0 = time.perf_counter()
        ctx._jpeg_flight.append(self)
        pending.then(self._resolve, self._failed)
        return True

    def fail_now(self):
        # a deferred start failed: this frame goes as pixels (the texture still holds it: the draw waits)
        self._deliver(self._ctx._sync_result())

    def then(self, callback):
        self._callbacks.append(callback)

    def _release(self):
        ctx = self._ctx
        if self in ctx._jpeg_flight:
            ctx._jpeg_flight.remove(self)
        waiting, self.on_done = self.on_done, []
        for fn in waiting:
            fn(self._enc)

    def _deliver(self, result):
        ctx = self._ctx
        frame = result.get("data")
        try:
            if self.hand:
                if result.get("method") == "bitmap" and self.seq > ctx._presented and ctx._present_cb is not None:
                    r = dict(result)
                    r.pop("method")
                    ctx._present_cb(**r)
                elif result.get("method") == "bitmap":
                    ctx.stats["dropped"] += 1  # a newer frame went out first
            else:
                for cb in self._callbacks:
                    cb(result)
        finally:
            if isinstance(frame, MappedFrame):
                frame.done()

    def _resolve(self, jpeg):
        ctx = self._ctx
        read = int(self._enc.last.get("read_back", 0))
        if "needs_444" in self._enc.last and self._measure:  # AUTO: this frame's chroma says the next one's
            ctx._ss_auto = "444" if self._enc.last["needs_444"] else "420"
            ctx.stats["jpeg_444" if self._ss == "444" else "jpeg_420"] += 1
        dt = time.perf_counter() - self._t0  # submit → file mapped: what "one behind" overlaps (_choose)
        ctx._readback_s = dt if not ctx._readback_s else 0.9 * ctx._readback_s + 0.1 * dt
        try:
            if ctx._texture is None:
                return self._deliver({"method": "skip"})  # closed or reconfigured meanwhile
            self._deliver({"method": "bitmap", "format": "rgba-u8",
                           "data": EncodedJpeg(ctx, jpeg, self._w, self._h, self._q, read, self.seq)})
        finally:
            self._release()

    def _failed(self, error):
        ctx = self._ctx
        ctx.stats["jpeg_why_not"] = f"{type(error).__name__}: {error}"
        ctx._jpeg_skip = JPEG_RETRY_FRAMES  # e.g. a frame whose data outgrew the GPU buffer (noise)
        try:
            if ctx._texture is None or ctx._drawn_seq != self.seq:
                return self._deliver({"method": "skip"})  # a newer frame is in the texture: it goes out instead
            self._deliver(ctx._sync_result())
        finally:
            self._release()


class _Newest:
    """The awaitable of a newest-first present: then(callback) gets the present result once the frame is mapped."""

    def __init__(self, ctx, slot):
        self._ctx, self._slot, self._seq = ctx, slot, slot.seq
        self._callbacks = []
        slot.promise.then(self._resolve)

    def then(self, callback):
        self._callbacks.append(callback)

    def _resolve(self, _r=None):
        ctx, slot = self._ctx, self._slot
        if slot.seq != self._seq or slot.state != "reading":
            result = {"method": "skip"}  # the context was reconfigured or closed meanwhile
        else:
            slot.on_mapped()
            result = ctx._result(slot)
        frame = result.get("data")
        try:
            for cb in self._callbacks:
                cb(result)
        finally:
            if frame is not None:
                frame.done()  # rcanvas has copied it (or it was not presented): unmapped now
