#!/usr/bin/env python3
"""Drives the chat page of `lacuna serve --demo` in headless Chromium through chromedriver,
speaking the W3C WebDriver HTTP protocol with urllib (no selenium): the model label loads, a
message sent from the text box streams a canvas with masked positions, and the reply lands in
`.msg.assistant.reply`. Saves a screenshot of the finished page and, when it catches one, one
taken mid-denoising. Exits non-zero with a message on any failure.

Usage (repository root; Debian: apt-get install chromium chromium-driver):
    python3 tools/serve-check/browser.py target/release/lacuna \
        --screenshot target/serve-page.png --canvas-screenshot target/serve-canvas.png
"""
import argparse, base64, json, os, shutil, signal, socket, subprocess, sys, time, urllib.error, urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lacuna_server import LacunaServer, ServerError, fail  # noqa: E402

ELEMENT = "element-6066-11e4-a52e-4f735466cecf"  # the W3C web element key
MODEL = "lacuna-demo"

# Installed once the page has loaded: records every canvas state the page draws, so a
# generation faster than our polling is still observed (the page replaces a canvas's spans on
# every step; a step with masks left shows `.canvas .m`).
OBSERVER = """
window.__seen = {masked: 0, maxMasks: 0, steps: 0};
new MutationObserver(() => {
  const m = document.querySelectorAll('#log .canvas .m').length;
  if (m > 0) { window.__seen.masked += 1; window.__seen.maxMasks = Math.max(window.__seen.maxMasks, m); }
  window.__seen.steps += 1;
}).observe(document.getElementById('log'), {childList: true, subtree: true});
"""


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class WebDriverError(RuntimeError):
    pass


class WebDriver:
    """The few W3C WebDriver commands this check needs."""

    def __init__(self, url):
        self.url = url
        self.session = None

    def call(self, method, path, body=None, timeout=60):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.url + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                return json.loads(r.read() or b"{}").get("value")
        except urllib.error.HTTPError as e:
            try:
                v = json.loads(e.read()).get("value", {})
                msg = f"{v.get('error')}: {v.get('message', '')[:500]}"
            except Exception:  # noqa: BLE001 - the body was not WebDriver JSON
                msg = str(e)
            raise WebDriverError(f"{method} {path}: HTTP {e.code}: {msg}") from None

    def s(self, method, path, body=None, **kw):
        return self.call(method, f"/session/{self.session}{path}", body, **kw)

    def new_session(self, binary, args):
        opts = {"args": args}
        if binary:
            opts["binary"] = binary
        v = self.call("POST", "/session", {"capabilities": {"alwaysMatch": {
            "browserName": "chrome", "goog:chromeOptions": opts}}})
        self.session = v["sessionId"]
        return v["capabilities"]

    def quit(self):
        if self.session:
            try:
                self.s("DELETE", "", timeout=10)
            except (WebDriverError, OSError):
                pass
            self.session = None

    def find(self, css):
        return self.s("POST", "/element", {"using": "css selector", "value": css})[ELEMENT]

    def find_all(self, css):
        return [e[ELEMENT] for e in self.s("POST", "/elements", {"using": "css selector", "value": css})]

    def text(self, el):
        return self.s("GET", f"/element/{el}/text")

    def type(self, el, text):
        self.s("POST", f"/element/{el}/clear", {})
        self.s("POST", f"/element/{el}/value", {"text": text})

    def click(self, el):
        self.s("POST", f"/element/{el}/click", {})

    def js(self, script, *args):
        return self.s("POST", "/execute/sync", {"script": script, "args": list(args)})

    def screenshot(self, path):
        png = base64.b64decode(self.s("GET", "/screenshot"))
        check(png[:8] == b"\x89PNG\r\n\x1a\n", "the screenshot is not a PNG")
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        with open(path, "wb") as f:
            f.write(png)
        return len(png)


def check(cond, msg):
    if not cond:
        fail(msg)


def wait_for(what, fn, timeout, interval=0.05):
    deadline = time.monotonic() + timeout
    while True:
        v = fn()
        if v:
            return v
        if time.monotonic() > deadline:
            fail(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(interval)


def start_chromedriver(path):
    port = free_port()
    proc = subprocess.Popen([path, f"--port={port}"], stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)  # its own process group, with the browsers
    wd = WebDriver(f"http://127.0.0.1:{port}")

    def ready():
        if proc.poll() is not None:
            fail(f"{path} exited with {proc.returncode}")
        try:
            return (wd.call("GET", "/status", timeout=2) or {}).get("ready")
        except (OSError, WebDriverError):
            return False
    wait_for("chromedriver to answer /status", ready, 20)
    return proc, wd


def stop_group(proc):
    """Stops chromedriver and whatever it started (its process group, made at Popen)."""
    for sig, wait in ((signal.SIGTERM, 5), (signal.SIGKILL, 5)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(wait)
        except subprocess.TimeoutExpired:
            continue
        try:  # chromedriver is gone; give its children a moment, then the next signal
            os.killpg(proc.pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.5)
    deadline = time.monotonic() + 5  # killed processes take a moment to be reaped
    while time.monotonic() < deadline:
        try:
            os.killpg(proc.pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)


def run(a, server, wd):
    caps = wd.new_session(a.chromium, ["--headless=new", "--no-sandbox", "--disable-gpu",
                                       "--window-size=1200,800"])
    print(f"chromium {caps.get('browserVersion')}, session {wd.session}")
    wd.s("POST", "/url", {"url": server.base_url + "/"})
    label = wd.find("#model")
    shown = wait_for(f"#model to show {MODEL}", lambda: MODEL in (t := wd.text(label)) and t, 20)
    print(f"ok   #model shows {shown!r}")
    wd.js(OBSERVER)

    # A long, slow generation (128 tokens, 128 steps: ~1.5 s on the demo model) so the canvas
    # can be seen and photographed while it denoises.
    wd.type(wd.find("#max_tokens"), str(a.max_tokens))
    wd.type(wd.find("#steps"), str(a.steps))
    wd.type(wd.find("#input"), "Who made the heaven and the earth?")
    t0 = time.monotonic()
    wd.click(wd.find("#send"))

    mid_shot, polled_masks = None, 0
    deadline = t0 + a.timeout
    while True:
        state = wd.js("""
            const c = document.querySelector('#log .msg.assistant.canvas');
            const r = document.querySelector('#log .msg.assistant.reply');
            const e = document.querySelector('#log .msg.assistant.error');
            return {masks: c ? c.querySelectorAll('.m').length : 0,
                    reply: r ? r.textContent : null, error: e ? e.textContent : null};""")
        if state["error"] is not None:
            fail(f"the page shows an error: {state['error']!r}\nserver log:\n{server.log()}")
        if state["reply"] is not None:
            break
        if state["masks"] > 0:
            polled_masks += 1
            if a.canvas_screenshot and mid_shot is None:
                n = wd.screenshot(a.canvas_screenshot)
                mid_shot = state["masks"]
                print(f"ok   mid-denoising screenshot ({mid_shot} masked positions): "
                      f"{a.canvas_screenshot} ({n} bytes)")
        if time.monotonic() > deadline:
            fail(f"no .msg.assistant.reply within {a.timeout:.0f} s\nserver log:\n{server.log()}")
        time.sleep(0.02)
    secs = time.monotonic() - t0
    seen = wd.js("return window.__seen;")
    check(seen["masked"] > 0 or polled_masks > 0,
          f"no canvas with masked positions (.canvas .m) was drawn during the generation "
          f"(observer: {seen}, polls with masks: {polled_masks})")
    print(f"ok   canvas with masks drawn: {seen['masked']} of {seen['steps']} page updates "
          f"(up to {seen['maxMasks']} masked positions), seen by {polled_masks} polls")
    reply = state["reply"]
    check(reply.strip(), "the .msg.assistant.reply element is empty")
    print(f"ok   reply in {secs:.2f} s: {reply[:70]!r}")
    stats = wd.js("const s = document.querySelectorAll('#log .stats'); "
                  "return s.length ? s[s.length - 1].textContent : null;")
    check(stats and "tokens" in stats, f"the stats line after the reply is {stats!r}")
    print(f"ok   stats: {stats!r}")
    n = wd.screenshot(a.screenshot)
    print(f"ok   screenshot: {a.screenshot} ({n} bytes)")
    if a.canvas_screenshot and mid_shot is None:
        print("note: the generation finished before a mid-denoising screenshot could be taken")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("binary", help="the lacuna binary, e.g. target/release/lacuna")
    ap.add_argument("--chromium", default=next((p for p in ("/usr/bin/chromium", "/usr/bin/chromium-browser")
                                                if os.path.exists(p)), None))
    ap.add_argument("--chromedriver", default=shutil.which("chromedriver") or "/usr/bin/chromedriver")
    ap.add_argument("--screenshot", default="target/serve-page.png")
    ap.add_argument("--canvas-screenshot", default=None, help="also save one screenshot mid-denoising")
    ap.add_argument("--max-tokens", type=int, default=128)
    ap.add_argument("--steps", type=int, default=128)
    ap.add_argument("--timeout", type=float, default=60, help="seconds for the reply")
    a = ap.parse_args()
    check(os.access(a.chromedriver, os.X_OK), f"chromedriver not found at {a.chromedriver} "
                                              f"(Debian: apt-get install chromium chromium-driver)")
    t0 = time.monotonic()
    driver = wd = None
    try:
        with LacunaServer(a.binary, ["--demo"]) as server:
            print(f"server at {server.base_url}")
            driver, wd = start_chromedriver(a.chromedriver)
            try:
                run(a, server, wd)
            except WebDriverError as e:
                fail(f"WebDriver: {e}")
            finally:
                wd.quit()
            rc, secs = server.stop()
            check(rc == 0, f"the server exited with {rc} after SIGTERM\n{server.log()}")
    except ServerError as e:
        fail(str(e))
    finally:
        if wd is not None:
            wd.quit()
        if driver is not None:
            stop_group(driver)
    print(f"all browser checks passed in {time.monotonic() - t0:.1f} s")


if __name__ == "__main__":
    main()
