# The Chalk Compute Python driver: a persistent namespace inside a sandbox, driven by the server over this
# process's stdin (commands) and stdout (framed events). It runs as the sandbox's own code: the server trusts
# nothing it says (every frame is bounded and checked there), and a snippet can overwrite any of it, which only
# changes what the snippet's own execution reports.
#
# Frames to the server: 1 type byte, a 4-byte big-endian length, the payload.
#   R ready {json}        O stdout bytes       E stderr bytes
#   A artifact: 4-byte header length, {json header}, the bytes
#   S skipped artifact {json}   X error {json}   C done {json}
# Commands from the server: a 4-byte big-endian length and {json}.
import ast
import base64
import builtins
import json
import linecache
import os
import signal
import struct
import sys
import threading
import traceback

OUT_CHUNK = 64 * 1024
MAX_TEXT = 64 * 1024
MAX_TRACEBACK = 256 * 1024

# the protocol's own descriptors, out of the snippet's way: fd 0 becomes /dev/null and fds 1 and 2 pipes we read
PROTO = os.dup(1)
COMMANDS = os.dup(0)
os.set_inheritable(PROTO, False)
os.set_inheritable(COMMANDS, False)
_null = os.open(os.devnull, os.O_RDONLY)
os.dup2(_null, 0)
os.close(_null)

_send_lock = threading.Lock()
state = {"running": False, "sending": False, "deferred": False, "bundle": 0, "max_artifact": None,
         "charts": False, "execution": ""}


def _write_all(fd, data):
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def send(kind, payload):
    main = threading.current_thread() is threading.main_thread()
    if main:
        state["sending"] = True
    try:
        with _send_lock:
            _write_all(PROTO, kind + struct.pack(">I", len(payload)) + payload)
    finally:
        if main:
            state["sending"] = False
    if main and state["deferred"] and state["running"]:
        # an interrupt that came while a frame was half written takes effect now that it is whole
        state["deferred"] = False
        raise KeyboardInterrupt


def send_json(kind, value):
    send(kind, json.dumps(value).encode("utf-8"))


class Capture:
    """One of fd 1 / fd 2 as a pipe whose bytes become O / E frames, in order, with a marker to know all is sent."""

    def __init__(self, fd, kind):
        self.kind = kind
        read_end, write_end = os.pipe()
        os.dup2(write_end, fd)
        os.close(write_end)
        os.set_inheritable(read_end, False)
        self.read_end = read_end
        self.fd = fd
        self.marker = None
        self.seen = threading.Event()
        threading.Thread(target=self._pump, daemon=True).start()

    def sync(self):
        """Returns once everything written to the fd before this call has been sent."""
        self.marker = b"\x00chalk-sync-" + os.urandom(12).hex().encode() + b"\x00"
        self.seen.clear()
        _write_all(self.fd, self.marker)
        self.seen.wait(5)

    def _pump(self):
        held = b""
        while True:
            try:
                data = os.read(self.read_end, OUT_CHUNK)
            except InterruptedError:
                continue
            if not data:
                return
            data = held + data
            held = b""
            marker = self.marker
            if marker is not None:
                at = data.find(marker)
                if at >= 0:
                    before, after = data[:at], data[at + len(marker):]
                    if before:
                        send(self.kind, before)
                    self.marker = None
                    self.seen.set()
                    if after:
                        send(self.kind, after)
                    continue
                # keep back a tail that may be the start of the marker, split across reads
                for keep in range(min(len(marker) - 1, len(data)), 0, -1):
                    if marker.startswith(data[-keep:]):
                        held = data[-keep:]
                        data = data[:-keep]
                        break
            if data:
                send(self.kind, data)


STDOUT = Capture(1, b"O")
STDERR = Capture(2, b"E")
sys.stdout = open(1, "w", encoding="utf-8", errors="backslashreplace", buffering=1, closefd=False)
sys.stderr = open(2, "w", encoding="utf-8", errors="backslashreplace", buffering=1, closefd=False)
sys.stdin = open(0, "r", closefd=False)



def _on_sigint(signum, frame):
    # only the snippet is interrupted: between snippets the driver's own work must not be torn
    if state["running"]:
        if state["sending"]:
            state["deferred"] = True
        else:
            raise KeyboardInterrupt


signal.signal(signal.SIGINT, _on_sigint)


def _clip(text, limit):
    return text if len(text) <= limit else text[:limit] + "... [%d characters cut]" % (len(text) - limit)


def send_artifact(name, mime, data, role, bundle, kind):
    if isinstance(data, str):
        data = data.encode("utf-8")
    limit = state["max_artifact"]
    if limit is not None and len(data) > limit:
        send_json(b"S", {"name": name, "reason": "larger than max_artifact_bytes (%d)" % limit, "size": len(data)})
        return
    header = json.dumps({"name": name, "mime": mime, "role": role, "bundle": bundle, "kind": kind}).encode()
    send(b"A", struct.pack(">I", len(header)) + header + data)


REPRS = [
    ("_repr_html_", "text/html"),
    ("_repr_markdown_", "text/markdown"),
    ("_repr_svg_", "image/svg+xml"),
    ("_repr_png_", "image/png"),
    ("_repr_jpeg_", "image/jpeg"),
    ("_repr_latex_", "text/latex"),
    ("_repr_json_", "application/json"),
]
SUFFIX = {"text/plain": "txt", "text/html": "html", "text/markdown": "md", "image/svg+xml": "svg",
          "image/png": "png", "image/jpeg": "jpg", "text/latex": "tex", "application/json": "json"}


def mime_bundle(value):
    bundle = {}
    mimebundle = getattr(value, "_repr_mimebundle_", None)
    if callable(mimebundle):
        try:
            got = mimebundle()
            if isinstance(got, tuple):
                got = got[0]
            if isinstance(got, dict):
                bundle.update(got)
        except Exception:
            pass
    for method, mime in REPRS:
        if mime in bundle:
            continue
        fn = getattr(value, method, None)
        if callable(fn):
            try:
                got = fn()
            except Exception:
                continue
            if isinstance(got, tuple):
                got = got[0]
            if got is not None:
                bundle[mime] = got
    if "text/plain" not in bundle:
        bundle["text/plain"] = repr(value)
    return bundle


def publish(bundle, role):
    state["bundle"] += 1
    number = state["bundle"]
    prefix = "result" if role == "execute_result" else "display-%d" % number
    for mime, data in bundle.items():
        if mime == "application/json" and not isinstance(data, (str, bytes)):
            data = json.dumps(data)
        elif isinstance(data, str) and mime in ("image/png", "image/jpeg"):
            try:
                data = base64.b64decode(data)
            except Exception:
                continue
        elif not isinstance(data, (str, bytes)):
            data = str(data)
        send_artifact(prefix + "." + SUFFIX.get(mime, "bin"), mime, data, role, number, "display")


def display(*values, raw=False):
    """Shows each value with its richest representations, as IPython's display() does."""
    for value in values:
        publish(value if raw and isinstance(value, dict) else mime_bundle(value), "display_data")


builtins.display = display


def capture_figures():
    if not state["charts"]:
        return
    pyplot = sys.modules.get("matplotlib.pyplot")
    if pyplot is None:
        return
    import io

    for number in pyplot.get_fignums():
        figure = pyplot.figure(number)
        buffer = io.BytesIO()
        figure.savefig(buffer, format="png")
        state["bundle"] += 1
        bundle = state["bundle"]
        send_artifact("figure-%d.png" % number, "image/png", buffer.getvalue(), "display_data", bundle, "chart")
        send_artifact("figure-%d.txt" % number, "text/plain", repr(figure), "display_data", bundle, "chart")
    pyplot.close("all")


def _patch_show():
    pyplot = sys.modules.get("matplotlib.pyplot")
    if pyplot is not None and not getattr(pyplot.show, "_chalk", False):
        def show(*args, **kwargs):
            capture_figures()

        show._chalk = True
        pyplot.show = show


def error_frame(exc, cell):
    frames = traceback.extract_tb(exc.__traceback__)
    # the driver's (and IPython's) own frames come first; the user sees the snippet's
    while frames and frames[0].filename != cell and not frames[0].filename.startswith("<ipython-input"):
        frames.pop(0)
    # and the driver's signal handler or deferred raise, where a KeyboardInterrupt starts
    while frames and frames[-1].filename == "<string>" and frames[-1].name in ("_on_sigint", "send"):
        frames.pop()
    lines = ["Traceback (most recent call last):\n"] if frames else []
    lines += traceback.format_list(frames)
    lines += traceback.format_exception_only(type(exc), exc)
    text = _clip("".join(lines), MAX_TRACEBACK)
    try:
        value = str(exc)
    except Exception:
        value = "<unprintable %s>" % type(exc).__name__
    send_json(b"X", {"ename": type(exc).__name__, "evalue": _clip(value, MAX_TEXT), "traceback": text})


NAMESPACE = {"__name__": "__main__", "__builtins__": builtins}


def ipython_shell():
    """IPython's shell when the image has it (magics, its display system, its rich reprs) unless told not to."""
    if os.environ.get("CHALK_PYTHON_SHELL") == "plain":
        return None
    try:
        from IPython.core.displayhook import DisplayHook
        from IPython.core.displaypub import DisplayPublisher
        from IPython.core.interactiveshell import InteractiveShell
    except Exception:
        return None

    class Publisher(DisplayPublisher):
        def publish(self, data, metadata=None, source=None, *, transient=None, update=False, **kwargs):
            publish(dict(data), "display_data")

        def clear_output(self, wait=False):
            pass

    class Hook(DisplayHook):
        def start_displayhook(self):
            pass

        def write_output_prompt(self):
            pass

        def write_format_data(self, format_dict, md_dict=None):
            publish(dict(format_dict), "execute_result")

        def finish_displayhook(self):
            pass

    import warnings

    # sys.exit ends the interpreter here, as the plain path does: IPython's advice on how to quit does not apply
    warnings.filterwarnings("ignore", message="To exit: use")
    shell = InteractiveShell.instance(display_pub_class=Publisher, displayhook_class=Hook, colors="NoColor")
    shell.history_manager.enabled = False

    def showtraceback(*args, **kwargs):
        # the exception travels as an error frame; run_ipython reads it from the result
        pass

    shell.showtraceback = showtraceback
    shell.showsyntaxerror = showtraceback
    return shell


SHELL = ipython_shell()


def run_ipython(code, cell):
    """Runs a cell in IPython; raises what the cell raised, as the plain path does."""
    result = SHELL.run_cell(code, store_history=True)
    error = result.error_before_exec or result.error_in_exec
    if error is not None:
        raise error


class _Done(BaseException):
    """The IPython path finished its cell."""


def run(command):
    cell = "<cell-%d>" % command["number"]
    code = command["code"]
    state["max_artifact"] = command.get("max_artifact_bytes")
    state["charts"] = bool(command.get("capture_charts"))
    state["execution"] = command["id"]
    saved_env = {}
    for key, value in command.get("env", {}).items():
        saved_env[key] = os.environ.get(key)
        os.environ[key] = value
    saved_cwd = None
    status, exit_code = "ok", None
    try:
        if command.get("workdir"):
            saved_cwd = os.getcwd()
            os.chdir(command["workdir"])
        linecache.cache[cell] = (len(code), None, code.splitlines(True), cell)
        state["running"] = True
        if SHELL is not None:
            run_ipython(code, cell)
            _patch_show()
            capture_figures()
            raise _Done()
        tree = ast.parse(code, cell, "exec")
        last = None
        if tree.body and isinstance(tree.body[-1], ast.Expr):
            last = ast.Expression(tree.body.pop().value)
        exec(compile(tree, cell, "exec"), NAMESPACE)
        if last is not None:
            value = eval(compile(last, cell, "eval"), NAMESPACE)
            if value is not None:
                NAMESPACE["_"] = value
                publish(mime_bundle(value), "execute_result")
        _patch_show()
        capture_figures()
    except _Done:
        state["running"] = False
    except SystemExit as e:
        state["running"] = False
        code_value = e.code
        if code_value is None:
            exit_code = 0
        elif isinstance(code_value, int):
            exit_code = code_value & 0xFF
        else:
            print(code_value, file=sys.stderr)
            exit_code = 1
        status = "exit"
    except KeyboardInterrupt as e:
        state["running"] = False
        error_frame(e, cell)
        status = "interrupted"
    except BaseException as e:
        state["running"] = False
        error_frame(e, cell)
        status = "error"
    finally:
        state["running"] = False
        state["deferred"] = False
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except Exception:
            pass
        for key, value in saved_env.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        if saved_cwd is not None:
            try:
                os.chdir(saved_cwd)
            except OSError:
                pass
    _patch_show()
    STDOUT.sync()
    STDERR.sync()
    send_json(b"C", {"id": command["id"], "status": status, "exit": exit_code})
    if status == "exit":
        os._exit(exit_code)


def read_exactly(fd, n):
    chunks = []
    while n > 0:
        data = os.read(fd, n)
        if not data:
            return None
        chunks.append(data)
        n -= len(data)
    return b"".join(chunks)


def main():
    os.environ.setdefault("MPLBACKEND", "Agg")
    send_json(b"R", {"python": sys.version.split()[0], "shell": "ipython" if SHELL is not None else "plain"})
    while True:
        head = read_exactly(COMMANDS, 4)
        if head is None:
            os._exit(0)
        body = read_exactly(COMMANDS, struct.unpack(">I", head)[0])
        if body is None:
            os._exit(0)
        run(json.loads(body.decode("utf-8")))


main()
