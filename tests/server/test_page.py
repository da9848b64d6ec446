"""test_page: the chat page (GET /) in headless Chromium through selenium (Debian's chromium + chromium-driver).

Loads the page, sends a message and sees the streamed answer in the DOM with tok/s shown; a second turn carries the
conversation (the server reports the first turn's tokens as cached prefix); a long answer is stopped mid-stream with
the Stop button and the server cancels it (no request running, no KV block held by a sequence). Also checks that
src/server/page.c is generated from page.html. Ends "t_page: N passed, N failed"."""
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_server as T  # noqa: E402  (Server, check counters)

from selenium import webdriver  # noqa: E402
from selenium.webdriver.chrome.service import Service  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402


def wait_for(fn, timeout, what):
    t0 = time.time()
    while time.time() - t0 < timeout:
        try:
            v = fn()
            if v:
                return v
        except Exception:
            pass
        time.sleep(0.1)
    T.check(False, f"timed out waiting for {what}")
    return None


def main():
    T.check(subprocess.run([sys.executable, os.path.join(T.ROOT, "scripts", "embed_page.py"), "--check"]).returncode == 0,
            "src/server/page.c is generated from page.html (run scripts/embed_page.py)")
    srv = T.Server("--parallel", "2", "-c", "1024")
    opts = webdriver.ChromeOptions()
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1000,800"):
        opts.add_argument(a)
    opts.binary_location = "/usr/bin/chromium"
    drv = None
    try:
        drv = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=opts)
        drv.set_page_load_timeout(30)
        drv.get(srv.url + "/")
        T.check(drv.title == "tern", f"page title {drv.title!r}")
        wait_for(lambda: drv.find_element(By.ID, "model").text, 10, "the model name from /v1/models")
        T.check(drv.find_element(By.ID, "model").text == "SmolLM2-135M-Instruct.Q4_1", "model name shown")
        temp = drv.find_element(By.ID, "temp")
        temp.clear()
        temp.send_keys("0")
        mx = drv.find_element(By.ID, "max")
        mx.clear()
        mx.send_keys("24")

        def turn(text, timeout=60):
            n = len(drv.find_elements(By.CSS_SELECTOR, ".msg.assistant"))
            drv.find_element(By.ID, "input").send_keys(text)
            drv.find_element(By.ID, "send").click()
            return wait_for(lambda: len(drv.find_elements(By.CSS_SELECTOR, ".msg.assistant")) == n + 1 and
                            drv.find_elements(By.CSS_SELECTOR, ".msg.assistant")[-1].get_attribute("data-done"),
                            timeout, f"the answer to {text!r}")

        done = turn("What is the capital of France?")
        bubbles = drv.find_elements(By.CSS_SELECTOR, ".msg.assistant")
        T.check(done and len(bubbles) == 1 and bubbles[0].text.strip(), f"a streamed answer in the DOM: {bubbles[0].text!r}")
        stats = drv.find_element(By.ID, "stats").text
        T.check("tok/s" in stats, f"tok/s shown: {stats!r}")
        done = turn("And of Italy?")
        msgs = drv.find_elements(By.CSS_SELECTOR, ".msg")
        stats = drv.find_element(By.ID, "stats").text
        T.check(len(msgs) == 4 and msgs[3].text.strip(), f"the second turn: {len(msgs)} messages")
        cached = [int(w) for w in stats.replace(",", " ").split() if w.isdigit()]
        T.check("prompt tokens cached" in stats and len(cached) >= 2 and cached[-2] > 0,
                f"the conversation is kept and its prefix cached: {stats!r}")
        # stop mid-answer
        mx.clear()
        mx.send_keys("600")
        drv.find_element(By.ID, "input").send_keys("Write a very long story about a dragon.")
        drv.find_element(By.ID, "send").click()
        last = lambda: drv.find_elements(By.CSS_SELECTOR, ".msg.assistant")[-1]  # noqa: E731
        wait_for(lambda: len(drv.find_elements(By.CSS_SELECTOR, ".msg.assistant")) == 3 and len(last().text) > 20, 60,
                 "the third answer streaming")
        T.check(not drv.find_element(By.ID, "stop").get_attribute("disabled"), "Stop is enabled while streaming")
        drv.find_element(By.ID, "stop").click()
        wait_for(lambda: last().get_attribute("data-done") == "stopped", 10, "the answer stopped")
        T.check("(stopped)" in drv.find_element(By.ID, "stats").text, "the page says stopped")
        m = T.wait_idle(srv, timeout=10)
        T.check(m['tern_requests_total{outcome="cancelled"}'] >= 1 and m["tern_requests_running"] == 0
                and m["tern_kv_blocks_sequences"] == 0, f"the server cancelled the stopped answer: {m}")
        if os.environ.get("TERN_PAGE_SHOT"):
            drv.save_screenshot(os.environ["TERN_PAGE_SHOT"])
    finally:
        if drv:
            drv.quit()
        srv.stop()
    print(f"t_page: {T.passed} passed, {T.failed} failed", flush=True)
    return 1 if T.failed else 0


if __name__ == "__main__":
    sys.exit(main())
