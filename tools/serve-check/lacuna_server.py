"""Starts `lacuna serve` on a free port and stops it: shared by openai_client.py, browser.py
and tools/bench/serve_load.py. Standard library only.

    with LacunaServer(binary, ["--demo"]) as s:
        s.base_url            # "http://127.0.0.1:PORT"
        rc, secs = s.stop()   # SIGTERM, then wait
"""
import os, re, signal, subprocess, sys, threading, time

# The line `lacuna serve` prints on stderr once it listens (crates/lacuna-cli/src/serve.rs).
READY = re.compile(r"^lacuna serve: .* on http://(?P<addr>[^/\s]+)/")


class ServerError(RuntimeError):
    pass


class LacunaServer:
    def __init__(self, binary, args, start_timeout=120.0, env=None):
        self.binary = binary
        self.args = list(args)
        self.start_timeout = start_timeout
        self.env = env
        self.proc = None
        self.lines = []  # every stderr line, for diagnostics
        self.base_url = None
        self._ready = threading.Event()
        self._reader = None
        self._signalled = None  # monotonic time of the SIGTERM

    def start(self):
        if not os.access(self.binary, os.X_OK):
            raise ServerError(f"{self.binary} is not an executable file (build it first: "
                              f"cargo build --release -p lacuna-cli)")
        cmd = [self.binary, "serve", "--port", "0", *self.args]
        self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, text=True, bufsize=1, env=self.env)
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        deadline = time.monotonic() + self.start_timeout
        while not self._ready.wait(0.05):
            if self.proc.poll() is not None:
                self._reader.join(2)
                raise ServerError(f"`{' '.join(cmd)}` exited with {self.proc.returncode} before "
                                  f"listening:\n{self.log()}")
            if time.monotonic() > deadline:
                self.kill()
                raise ServerError(f"`{' '.join(cmd)}` printed no address within "
                                  f"{self.start_timeout:.0f} s:\n{self.log()}")
        return self

    def _read(self):
        # Keeps draining stderr after the address line so the server never blocks on a full pipe.
        for line in self.proc.stderr:
            line = line.rstrip("\n")
            self.lines.append(line)
            m = READY.match(line)
            if m and not self._ready.is_set():
                self.base_url = "http://" + m.group("addr")
                self._ready.set()

    def log(self, last=40):
        return "\n".join("    " + l for l in self.lines[-last:]) or "    (nothing on stderr)"

    @property
    def pid(self):
        return self.proc.pid

    def terminate(self):
        """Sends SIGTERM once (the server drains running generations, then exits)."""
        if self._signalled is None and self.proc is not None and self.proc.poll() is None:
            self._signalled = time.monotonic()
            self.proc.send_signal(signal.SIGTERM)

    def stop(self, timeout=10.0):
        """SIGTERM (unless terminate() sent it); returns (exit code, or None if still running
        after `timeout`; seconds since the signal)."""
        if self.proc is None:
            return None, 0.0
        self.terminate()
        t0 = self._signalled if self._signalled is not None else time.monotonic()
        try:
            rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return None, time.monotonic() - t0
        if self._reader:
            self._reader.join(2)
        return rc, time.monotonic() - t0

    def kill(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.kill()  # a no-op after a clean stop()
        return False


def fail(msg):
    """Exits non-zero with `msg` on stderr."""
    print(f"FAIL: {msg}", file=sys.stderr, flush=True)
    sys.exit(1)
