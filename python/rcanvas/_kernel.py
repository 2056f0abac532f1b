# SPDX-License-Identifier: MIT
"""rcanvas inside a Jupyter (IPython) kernel: where a canvas's URL goes, the names of unnamed canvases, the port
and tokens that stay the same across kernel restarts, and the notebook server's proxy (rcanvas.jupyter).

Nothing here imports IPython or ipykernel unless the process already did (a kernel has): outside a kernel every
function answers "not in a kernel" at the cost of a dict lookup.
"""

import base64
import errno
import hashlib
import hmac
import os
import stat
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


class PortsDirError(RuntimeError):
    """RCANVAS_JUPYTER_PORTS names a folder that someone other than this user could change: refused."""


def _trusted(st):
    return st.st_uid in (0, os.getuid())


def _path_trouble(path):
    """Why another user could change what path leads to, or None: each folder the path goes through (the
    targets of symlinks on the way included) must be this user's or root's and writable by no one else, or be a
    sticky folder (/tmp) whose entry on the path is this user's or root's (no one else may rename it there)."""
    todo = [c for c in os.path.abspath(path).split("/") if c]
    cur, hops = "/", 0
    while todo:
        name = todo.pop(0)
        if name == ".":
            continue
        if name == "..":
            cur = os.path.dirname(cur)
            continue
        dst = os.stat(cur)          # cur has no symlink left in it: stat is lstat here
        entry = os.path.join(cur, name)
        est = os.lstat(entry)
        if not (_trusted(dst) and (not dst.st_mode & 0o022 or (dst.st_mode & stat.S_ISVTX and _trusted(est)))):
            return f"{cur} is writable by others, who could replace {name} in it"
        if stat.S_ISLNK(est.st_mode):
            if not todo:
                return f"{entry} is a symlink, not a folder"
            hops += 1
            if hops > 40:
                return f"{entry}: too many symlinks"
            target = os.readlink(entry)
            if target.startswith("/"):
                cur = "/"
            todo[:0] = [c for c in target.split("/") if c]
            continue
        cur = entry
    return None


def open_ports_dir(path):
    """A file descriptor of the folder path (RCANVAS_JUPYTER_PORTS) after checking that only this user can
    change what it holds: whoever can write there chooses the ports rcanvas.jupyter serves on the notebook's
    origin, and could make a kernel write where it did not mean to. The folder itself must be no symlink (opened
    with O_NOFOLLOW: a symlink another user swaps later is never followed), a folder of this user with mode 0700,
    and no folder on the way there writable by another user (_path_trouble). Raises PortsDirError saying why."""
    why = None
    try:
        why = _path_trouble(path)
        if why is None:
            fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as e:
        why = "a symlink, not a folder" if e.errno == errno.ELOOP else (e.strerror or str(e))
    if why is None:
        st = os.fstat(fd)
        if st.st_uid != os.getuid():
            why = f"owned by uid {st.st_uid}, not by this user (uid {os.getuid()})"
        elif stat.S_IMODE(st.st_mode) & 0o077:
            why = f"mode {stat.S_IMODE(st.st_mode):04o}: others may read or write it"
        if why is not None:
            os.close(fd)
    if why is not None:
        raise PortsDirError(f"RCANVAS_JUPYTER_PORTS={path} refused: {why}. It must be a folder of this user, "
                            "mode 0700 (chmod 700), reached through no folder or symlink another user can change "
                            "(unset it: rcanvas.jupyter then makes one)")
    return fd


def register_port(port):
    """Tells rcanvas.jupyter that this process serves rcanvas on port: a file named by the port in
    $RCANVAS_JUPYTER_PORTS (the extension's folder, checked by open_ports_dir) holding this process's pid; the
    extension proxies only to such ports. Returns the file's path, or None (no folder named). Raises
    PortsDirError for a folder another user could change. The file is made anew (O_CREAT|O_EXCL|O_NOFOLLOW,
    relative to the folder's descriptor): an entry already there (a stale file of a process gone, or a symlink)
    is removed, never written through."""
    d = os.environ.get("RCANVAS_JUPYTER_PORTS")
    if not d:
        return None
    dfd = open_ports_dir(d)
    name = str(int(port))
    try:
        for attempt in range(2):
            try:
                fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600,
                             dir_fd=dfd)
                break
            except FileExistsError:
                if attempt:
                    raise
                # this process listens on the port now, so whoever registered it before does not serve it
                os.unlink(name, dir_fd=dfd)
        try:
            os.write(fd, f"{os.getpid()}\n".encode())
        finally:
            os.close(fd)
    except OSError as e:
        raise PortsDirError(f"RCANVAS_JUPYTER_PORTS={d}: cannot register port {name}: {e.strerror or e}") from None
    finally:
        os.close(dfd)
    return os.path.join(d, name)


def unregister_port(path):
    """Removes a registration made by register_port, if it is still this process's (a kernel that took the port
    after this one closed its server registers it anew)."""
    if not path:
        return
    d, name = os.path.split(path)
    try:
        dfd = os.open(d, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dfd)
        try:
            mine = os.read(fd, 64).split()[:1] == [str(os.getpid()).encode()]
        finally:
            os.close(fd)
        if mine:
            os.unlink(name, dir_fd=dfd)
    except OSError:
        pass
    finally:
        os.close(dfd)


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
