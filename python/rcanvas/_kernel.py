# SPDX-License-Identifier: MIT
"""rcanvas inside a Jupyter (IPython) kernel: where a canvas's URL goes, the names of unnamed canvases, the port
and tokens that stay the same across kernel restarts, and the notebook server's proxy (rcanvas.jupyter).

Nothing here imports IPython or ipykernel unless the process already did (a kernel has): outside a kernel every
function answers "not in a kernel" at the cost of a dict lookup.
"""

import base64
import hashlib
import hmac
import os
import sys

# The range of the ports chosen for kernels (below Linux's ephemeral range, 32768-60999, so that no outgoing
# connection holds one by chance); a kernel takes PORT_BASE + hash(its connection file) % PORT_SPAN.
PORT_BASE = 20000
PORT_SPAN = 10000
PORT_TRIES = 10     # that port taken: the next ones (wrapping within the range), then any free port


def shell():
    """The IPython shell of a Jupyter kernel (ipykernel's ZMQInteractiveShell), or None (a plain Python, a
    terminal IPython)."""
    ip = sys.modules.get("IPython")
    if ip is None:
        return None
    try:
        sh = ip.get_ipython()
    except Exception:
        return None
    return sh if sh is not None and getattr(sh, "kernel", None) is not None else None


def kernel_identity():
    """(kernel_id, key) of the running kernel: the name of its connection file ("kernel-<uuid>.json", the same
    across restarts of that kernel) and its message-signing key (bytes, secret; b"" when signing is off). None
    outside a kernel or when neither can be found."""
    sh = shell()
    if sh is None:
        return None
    kid = ""
    try:
        from ipykernel.connect import get_connection_file
        kid = os.path.basename(get_connection_file())
    except Exception:
        pass
    key = b""
    try:
        key = bytes(sh.kernel.session.key or b"")
    except Exception:
        pass
    if not kid and not key:
        return None
    return kid, key


def kernel_port(kernel_id, attempt=0):
    """The port this kernel tries first (attempt 0), then the next ones: stable across restarts of the kernel,
    so that an iframe left in the notebook finds the restarted kernel's server where it was."""
    h = int.from_bytes(hashlib.sha256(kernel_id.encode()).digest()[:4], "big")
    return PORT_BASE + (h + attempt) % PORT_SPAN


def kernel_tokens(kernel_id, key):
    """(token, view_token) derived from the kernel's secret key (HMAC-SHA256, 256 bits each, base64url: 43
    characters), the same across restarts of the kernel; None when the kernel has no key (then the server makes
    random ones, and an iframe left from before a restart says "token rejected")."""
    if not key:
        return None

    def derive(label):
        mac = hmac.new(key, f"rcanvas {label}\0{kernel_id}".encode(), hashlib.sha256).digest()
        return base64.urlsafe_b64encode(mac).rstrip(b"=").decode()

    return derive("token"), derive("view token")


_cell_counts = {}   # msg_id of the execute request -> unnamed canvases made during it


def cell_canvas_name():
    """The name of an unnamed canvas made while a notebook cell runs, so that running the cell again makes a
    canvas of the same name (which then replaces the old one): "cell-" + 10 hex digits of the cell's id when
    the front end sends one (JupyterLab 3+, Notebook 7, VS Code), else of the cell's code (Notebook 6: two cells
    of the same code share their canvas), "-2", "-3" … for the second, third canvas of one run. None outside a
    running cell."""
    sh = shell()
    if sh is None:
        return None
    try:
        parent = sh.get_parent() if hasattr(sh, "get_parent") else sh.parent_header
    except Exception:
        return None
    if not isinstance(parent, dict) or (parent.get("header") or {}).get("msg_type") != "execute_request":
        return None
    meta = parent.get("metadata") or {}
    key = meta.get("cellId") or meta.get("cell_id")
    key = f"id:{key}" if key else f"code:{(parent.get('content') or {}).get('code', '')}"
    msg_id = (parent.get("header") or {}).get("msg_id", "")
    if len(_cell_counts) > 1000:
        _cell_counts.clear()
    n = _cell_counts[msg_id] = _cell_counts.get(msg_id, 0) + 1
    name = "cell-" + hashlib.sha256(key.encode()).hexdigest()[:10]
    return name if n == 1 else f"{name}-{n}"


def proxy_prefix():
    """The path prefix of rcanvas.jupyter's proxy on the notebook server ("/rcanvas", "/user/me/rcanvas"), from
    RCANVAS_JUPYTER_PROXY: set by the extension in the notebook server's environment, which the kernels it
    starts inherit; "1" = "/rcanvas" (a notebook server at "/"); "0" or unset = no proxy (the browser reaches
    the kernel's port itself)."""
    v = os.environ.get("RCANVAS_JUPYTER_PROXY", "").strip()
    if v in ("", "0"):
        return None
    if v == "1":
        return "/rcanvas"
    if not v.startswith("/"):
        raise ValueError(f"RCANVAS_JUPYTER_PROXY must be 0, 1 or a path such as /rcanvas, not {v!r}")
    return v.rstrip("/")


def register_port(port):
    """Tells rcanvas.jupyter that this process serves rcanvas on port (a file in $RCANVAS_JUPYTER_PORTS, the
    extension's folder, 0700): it proxies only to such ports. Returns the file's path, or None (no folder)."""
    d = os.environ.get("RCANVAS_JUPYTER_PORTS")
    if not d or not os.path.isdir(d):
        return None
    path = os.path.join(d, str(int(port)))
    try:
        with open(path, "w") as f:
            f.write(f"{os.getpid()}\n")
    except OSError:
        return None
    return path


def unregister_port(path):
    if path:
        try:
            os.unlink(path)
        except OSError:
            pass


def announce(name, url, display_url=None):
    """Says where a new canvas is: in a notebook a small link in the cell's output (IPython display, not the
    stderr of a log line), elsewhere a line on stdout."""
    sh = shell()
    if sh is None:
        print(f"rcanvas: open {url}", flush=True)
        return
    import html

    from IPython.display import display
    href = html.escape(display_url or url, quote=True)
    label = html.escape(name or "default")
    display({"text/html": f'<div style="font-size:12px;opacity:0.75">rcanvas: canvas <code>{label}</code> · '
                          f'<a href="{href}" target="_blank" rel="noopener">open in a new tab</a></div>',
             "text/plain": f"rcanvas: open {url}"}, raw=True)
