# SPDX-License-Identifier: MIT
# Test shim for rendercanvas' events.py and text.py on Debian 12: they call ImageFont.load_default(size=…),
# which Pillow has only since 10.1 (Debian 12 ships 9.4). Here load_default(size=N) loads DejaVu Sans at N
# pixels (fonts-dejavu-core, a dependency of python3-pil's fontconfig chain) or, failing that, the default
# bitmap font. The examples themselves run unmodified; only this Pillow function is widened.
try:
    from PIL import ImageFont as _IF
    import inspect as _inspect

    if "size" not in _inspect.signature(_IF.load_default).parameters:
        _orig = _IF.load_default

        def load_default(size=None):
            if size is None:
                return _orig()
            for path in ("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf", "DejaVuSans.ttf"):
                try:
                    return _IF.truetype(path, int(round(size)))
                except OSError:
                    pass
            return _orig()

        _IF.load_default = load_default
except ImportError:
    pass
