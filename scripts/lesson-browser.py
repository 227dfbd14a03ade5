"""Open each lesson in JupyterLab in a real headless browser, Run All, and check that
every cell ran, no cell raised, every widget and picture rendered, no control's label is
cut short, and that using each widget's primary control (the one marked
``rmqlab-primary``: a click, a new choice in a list, the pointer moved over the store
map) changes what the widget shows; with --screenshots DIR, save one screenshot per
lesson.

    .venv/bin/python scripts/lesson-browser.py [--screenshots DIR] [01 02 ...]

Needs Chromium and its driver from Debian's packages (``apt-get install chromium
chromium-driver``) and ``pip install selenium``; without them it says so and exits 0
(the tests skip it then).  It starts its own JupyterLab on a free 127.0.0.1 port with a
random token and stops it at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run as a script: the package from this checkout
from rmqlab.lab.lessons import LESSONS_DIR, copy_lessons  # noqa: E402


def missing() -> str | None:
    if not (shutil.which("chromium") and shutil.which("chromedriver")):
        return "no Chromium/chromedriver (apt-get install chromium chromium-driver)"
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "no selenium (pip install selenium)"
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def working_copy(base: Path) -> Path:
    """The lessons copied as ``rmqlab lab`` copies them (JupyterLab saves a notebook it
    ran, and the shipped lessons are the reference outputs nbval compares with)."""
    copy_lessons(base / "lessons")
    return base / "lessons"


def lab_settings(base: Path) -> Path:
    """JupyterLab's user settings for the run (not the user's own): every cell in the
    page.  By default a notebook attaches cells out of view when the browser is idle; on
    a loaded machine cells were still missing after the run, so the check that every
    cell ran saw fewer cells, and Run All, still going, moved the focus from the widget
    being used to the cell it reached (the store map then got no keys)."""
    tracker = base / "settings" / "@jupyterlab" / "notebook-extension" / "tracker.jupyterlab-settings"
    tracker.parent.mkdir(parents=True, exist_ok=True)
    tracker.write_text(json.dumps({"windowingMode": "none"}))
    return base / "settings"


def code_cells(notebook: Path) -> int:
    """How many code cells the notebook file holds (what the page must show run)."""
    return sum(c.get("cell_type") == "code" for c in json.loads(notebook.read_text())["cells"])


def start_lab(port: int, token: str, log: Path, notebooks: Path, settings: Path) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "jupyterlab", "--no-browser", f"--port={port}", "--ip=127.0.0.1", f"--ServerApp.token={token}", f"--ServerApp.root_dir={notebooks}",
           f"--LabApp.user_settings_dir={settings}"]
    if hasattr(os, "getuid") and os.getuid() == 0:
        cmd.append("--allow-root")
    proc = subprocess.Popen(cmd, stdout=open(log, "w"), stderr=subprocess.STDOUT, cwd=notebooks)
    deadline = time.time() + 60
    while time.time() < deadline:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/api/status?token={token}", timeout=2)
            return proc
        except OSError:
            if proc.poll() is not None:
                break
            time.sleep(0.5)
    proc.terminate()
    raise RuntimeError(f"JupyterLab did not start within 60 s; its log:\n{log.read_text()[-3000:]}")


_STATE = """
const prompts = [...document.querySelectorAll('.jp-Notebook .jp-Cell.jp-CodeCell .jp-InputPrompt')].map(p => p.textContent.trim());
const errors = [...document.querySelectorAll('.jp-Notebook .jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]')]
  .map(e => e.textContent).filter(t => /Traceback|Error:|Exception/.test(t) && !/WARN/.test(t));
const widgetErrors = [...document.querySelectorAll('.jp-Notebook .jp-OutputArea-output')].map(e => e.textContent)
  .filter(t => /Error displaying widget|Loading widget\\.\\.\\./.test(t));
const widgets = document.querySelectorAll('.jp-Notebook .jupyter-widgets.widget-vbox, .jp-Notebook .widget-vbox').length;
const pictures = [...document.querySelectorAll('.jp-Notebook .jp-OutputArea-output svg, .jp-Notebook .jp-OutputArea-output img')];
const broken = pictures.filter(p => p.tagName === 'IMG' ? !(p.complete && p.naturalWidth > 0) : !(p.getBoundingClientRect().width > 0)).length;
const cut = [...document.querySelectorAll('.jp-Notebook .widget-label, .jp-Notebook .jupyter-button')]
  .filter(l => l.offsetParent && l.textContent.trim() && l.scrollWidth > l.clientWidth + 1).map(l => l.textContent.trim());
return {prompts, errors, widgetErrors, widgets, pictures: pictures.length, broken, cut};
"""

#: the rmqlab widgets of the notebook, outermost only (a hex viewer the store map opened
#: is the map's)
_WIDGETS = """
return [...document.querySelectorAll('.jp-Notebook .rmqlab-widget')].filter(e => !e.parentElement.closest('.rmqlab-widget'));
"""


def use_widget(driver, box) -> str | None:
    """Use the widget's primary control as a person would; None when what the widget
    shows changed within 30 s, else why not."""
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import Select

    marked = box.find_elements(By.CSS_SELECTOR, ".rmqlab-primary")
    if not marked:
        return "no control marked rmqlab-primary"
    control = marked[0]
    driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", control)
    time.sleep(0.3)
    before = box.text
    strips = control.find_elements(By.CSS_SELECTOR, ".rmqlab-storemap svg rect.strip")
    selects = control.find_elements(By.TAG_NAME, "select")
    if strips:  # the pointer along the log, then a click: the record named, its bytes opened
        ActionChains(driver).move_to_element(strips[0]).move_by_offset(strips[0].size["width"] // 5, 0).click().perform()
        if not _changed(box, before):
            return "the pointer over the map changed nothing"
        # then the keys: the map has the focus after the click; → → → moves the cursor
        # three pixels on (the description names the pixel).  The pixel is read once what
        # the map shows has settled: the hover's and the click's answers come back from
        # the kernel one after the other, the click's last (a loaded machine took > 1 s)
        _settled(box)
        at = re.findall(r"pixel (\d+): the log's bytes", box.text)
        if not at:
            return "the map names no pixel"
        ActionChains(driver).send_keys(Keys.ARROW_RIGHT * 3).perform()
        want = f"pixel {int(at[-1]) + 3}: the log's bytes"
        deadline = time.time() + 30
        while want not in box.text and time.time() < deadline:
            time.sleep(0.5)
        if want in box.text:
            return None
        # what a failure needs to be understood: where the keys went, where the slider
        # (linked to the map's cursor in the page) is, and what the kernel last described
        focus = driver.execute_script("const e = document.activeElement; return e ? `${e.tagName.toLowerCase()}.${e.className}` : 'none'")
        slider = [e.text for e in box.find_elements(By.CSS_SELECTOR, ".widget-readout")]
        shown = re.findall(r"pixel (\d+): the log's bytes", box.text)
        return (f"→ → → on the map did not move it from pixel {at[-1]} to {int(at[-1]) + 3}: the page's focus on {focus}, "
                f"the slider at {slider[:1]}, the description at pixel {shown[-1:]}")
    elif selects:
        choice = Select(selects[0])
        if len(choice.options) < 2:
            return "its list has one choice"
        now = next((i for i, o in enumerate(choice.options) if o.is_selected()), -1)
        choice.select_by_index((now + 1) % len(choice.options))
    elif control.tag_name == "button":
        control.click()
    else:
        others = [b for b in control.find_elements(By.TAG_NAME, "button") if "mod-active" not in (b.get_attribute("class") or "")]
        if not others:
            return "nothing to click"
        others[0].click()
    return None if _changed(box, before) else "what it shows did not change"


def _settled(box, quiet: float = 1.5, within: float = 30) -> None:
    """Wait until what ``box`` shows has not changed for ``quiet`` seconds (at most ``within``)."""
    deadline = time.time() + within
    last, since = box.text, time.time()
    while time.time() < deadline and time.time() - since < quiet:
        time.sleep(0.25)
        now = box.text
        if now != last:
            last, since = now, time.time()


def _changed(box, before: str, within: float = 30) -> bool:
    deadline = time.time() + within
    while time.time() < deadline:
        time.sleep(0.5)
        if box.text != before:
            return True
    return False


def run_lesson(driver, port: int, token: str, name: str, timeout: float, shots: Path | None) -> dict:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as EC
    from selenium.webdriver.support.ui import WebDriverWait

    cells = code_cells(LESSONS_DIR / name)
    driver.get(f"http://127.0.0.1:{port}/lab/tree/{name}?token={token}&reset")
    wait = WebDriverWait(driver, 60)
    wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, ".jp-Notebook .jp-Cell")))
    # the kernel must be idle before Run All (the status bar says so)
    wait.until(lambda d: d.execute_script("return [...document.querySelectorAll('.jp-StatusBar-TextItem')].some(e => /\\| Idle/.test(e.textContent))"))
    wait.until(EC.element_to_be_clickable((By.XPATH, "//div[contains(@class,'lm-MenuBar-itemLabel') and text()='Run']"))).click()
    wait.until(EC.element_to_be_clickable((By.XPATH, "//div[contains(@class,'lm-Menu-itemLabel') and text()='Run All Cells']"))).click()
    deadline = time.time() + timeout
    state = driver.execute_script(_STATE)
    while time.time() < deadline:
        time.sleep(0.5)
        state = driver.execute_script(_STATE)
        if len(state["prompts"]) == cells and all(p not in ("[*]:", "[ ]:", "") for p in state["prompts"]):
            break
    else:
        state["timeout"] = True
    state["cells"] = cells
    state["used"], state["unchanged"] = 0, []
    if not state.get("timeout"):
        for i, box in enumerate(driver.execute_script(_WIDGETS)):
            try:
                why = use_widget(driver, box)
            except Exception as err:  # a widget the page redrew meanwhile, a click intercepted: said, not raised
                why = f"{type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}"
            state["used"] += why is None
            if shots is not None:  # the widget as it is after its use
                shots.mkdir(parents=True, exist_ok=True)
                box.screenshot(str(shots / f"{Path(name).stem}-widget{i + 1}.png"))
            if why:
                state["unchanged"].append(f"widget {i + 1}: {why}")
    if shots is not None:
        shots.mkdir(parents=True, exist_ok=True)
        driver.save_screenshot(str(shots / f"{Path(name).stem}.png"))
    return state


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("lessons", nargs="*", help="lesson numbers (default: all)")
    ap.add_argument("--screenshots", type=Path, help="save one PNG per lesson here")
    ap.add_argument("--timeout", type=float, default=240, help="seconds per lesson")
    args = ap.parse_args(argv)
    why = missing()
    if why:
        print(f"skipped: {why}")
        return 0
    from selenium import webdriver

    names = sorted(p.name for p in LESSONS_DIR.glob("[0-9][0-9]_*.ipynb") if not args.lessons or p.name[:2] in args.lessons)
    port, token = free_port(), secrets.token_hex(16)
    log = Path(os.environ.get("TMPDIR", "/tmp")) / f"rmqlab-lab-{port}.log"
    work = Path(tempfile.mkdtemp(prefix="rmqlab-lessons-browser-"))
    lab = start_lab(port, token, log, working_copy(work), lab_settings(work))
    opts = webdriver.ChromeOptions()
    for a in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1400,2000"):
        opts.add_argument(a)
    opts.binary_location = shutil.which("chromium")
    # the driver from Debian's package: no lookup of a driver on the network
    os.environ.setdefault("SE_AVOID_STATS", "true")
    driver = webdriver.Chrome(options=opts, service=webdriver.ChromeService(executable_path=shutil.which("chromedriver")))
    failed = 0
    try:
        for name in names:
            began = time.time()
            st = run_lesson(driver, port, token, name, args.timeout, args.screenshots)
            problems = st["errors"] + st["widgetErrors"] + st["unchanged"]
            problems += [f"the page shows {len(st['prompts'])} of the notebook's {st['cells']} code cells"] if len(st["prompts"]) != st["cells"] else []
            problems += [f"{st['broken']} picture(s) not drawn"] if st["broken"] else []
            problems += [f"label cut short: {t!r}" for t in st["cut"]]
            ok = not st.get("timeout") and not problems
            failed += not ok
            print(f"{'ok  ' if ok else 'FAIL'} {name}: {len(st['prompts'])} code cells run, {st['widgets']} widget(s) rendered, "
                  f"{st['used']} used and changed, {st['pictures']} picture(s), {time.time() - began:.0f} s"
                  + (", timed out" if st.get("timeout") else "") + "".join(f"\n     {e[:300]}" for e in problems))
    finally:
        driver.quit()
        lab.terminate()
        try:
            lab.wait(20)
        except subprocess.TimeoutExpired:
            lab.kill()
        shutil.rmtree(work, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
