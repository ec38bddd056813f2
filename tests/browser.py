"""A headless Chromium for the tests that look at report.html the way a person's browser does:
found or installed with apt, run as a private, offline process, stopped by its process id.

    browser = install_chromium()
    browser.screenshot(page, png, width=1280, height=3000)
    sizes = browser.image_sizes(page)  # (complete, naturalWidth, naturalHeight) per <img>
    assert_report_renders(browser, page, figure_files, screenshot, height=6000)

Why each choice:

- Debian's `chromium` (CHROMIUM, a path, wins): missing, it is installed with `apt-get install -y
  chromium` (as root or through passwordless sudo, non-interactively, after an `update` when the
  package is unknown), the way rebalancing.adapters.rabbitmq_broker installs RabbitMQ. A failed
  install raises BrowserUnavailableError with apt's output: the tests fail, never skip.
- Every run gets a fresh temporary profile (`--user-data-dir`), no sandbox (root cannot have
  one), no GPU, no first-run, sync, extension or component-update traffic, and no network: host
  names resolve to nothing and any proxied request goes to a closed loopback port, so a page
  that needed the network shows a broken image instead of fetching it.
- The browser runs in a new session (its own process group); whatever happens (timeout, error,
  success), the group is sent SIGTERM then SIGKILL by the leader's process id, so no renderer,
  zygote or crash handler outlives the run.
- The report itself has no JavaScript: `image_sizes` writes a copy of the page with a small
  script that records each image's natural size into the DOM once the page has loaded, and
  reads it back from `--dump-dom`.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy
from PIL import Image

from tools.machine import PackageInstallError, apt_install, stop_process_group

PACKAGE = "chromium"
"""Debian's package, which installs /usr/bin/chromium."""

OFFLINE_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-extensions",
    "--disable-sync",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-default-apps",
    "--disable-dev-shm-usage",
    "--mute-audio",
    "--force-device-scale-factor=1",
    "--host-resolver-rules=MAP * ~NOTFOUND",
    "--proxy-server=127.0.0.1:9",
)
"""What every run passes: headless, private, quiet and unable to reach the network."""

IMAGE_PROBE = """<script>
window.addEventListener("load", () => {
  const sizes = Array.from(document.images, image =>
    `${image.complete ? 1 : 0} ${image.naturalWidth} ${image.naturalHeight}`);
  const probe = document.createElement("pre");
  probe.id = "image-probe";
  probe.textContent = sizes.join("\\n");
  document.body.appendChild(probe);
});
</script>"""
"""Appended to a copy of a page: once everything has loaded, one line per <img>, in document
order: complete (1/0), naturalWidth, naturalHeight; an image that failed to decode is 0 wide."""

PROBE_OUTPUT = re.compile(r'<pre id="image-probe">(.*?)</pre>', re.DOTALL)

LAYOUT_PROBE = """<script>
window.addEventListener("load", () => {
  const box = selector => {
    const element = document.querySelector(selector);
    return element ? element.getBoundingClientRect().bottom : null;
  };
  const overflowing = [];
  for (const element of document.body.querySelectorAll("*")) {
    if (element.closest(".scroll") || element.tagName === "SCRIPT") continue;
    const parent = element.parentElement.getBoundingClientRect();
    const own = element.getBoundingClientRect();
    const wider = element.scrollWidth > element.clientWidth + 1;
    if (own.width && (own.right > parent.right + 1 || wider)) {
      overflowing.push(`${element.tagName.toLowerCase()}.${element.className}#${element.id}`);
    }
  }
  const probe = document.createElement("pre");
  probe.id = "layout-probe";
  probe.textContent = JSON.stringify({
    viewport: [window.innerWidth, window.innerHeight],
    page_width: document.documentElement.scrollWidth,
    answer_bottom: box("#answer"),
    conclusion_bottom: box("#answer .conclusion"),
    overflowing: overflowing,
  });
  document.body.appendChild(probe);
});
</script>"""
"""Appended to a copy of a page: once loaded, where the answer ends in the window, the page's
width, and every element (outside a sideways-scrolling box) wider than its parent or than its
own box."""

LAYOUT_OUTPUT = re.compile(r'<pre id="layout-probe">(.*?)</pre>', re.DOTALL)


class BrowserUnavailableError(RuntimeError):
    """Chromium could not be installed or run; the message says what happened."""


def find_chromium() -> Path | None:
    """The Chromium executable: CHROMIUM (a path) when set, else `chromium` on the PATH.
    BrowserUnavailableError when CHROMIUM names no file (apt would not change that)."""
    if "CHROMIUM" in os.environ:
        candidate = Path(os.environ["CHROMIUM"])
        if not candidate.is_file():
            raise BrowserUnavailableError(f"CHROMIUM={candidate} is not a file")
        return candidate
    found = shutil.which("chromium")
    return Path(found) if found else None


def install_chromium(apt_get: str = "apt-get", timeout: float = 1200.0) -> Chromium:
    """Chromium, installed with apt first when it is missing.

    BrowserUnavailableError, with apt's output, when the install fails or leaves no
    executable; the caller's test fails with that message."""
    found = find_chromium()
    if found is not None:
        return Chromium(found)
    try:
        apt_install(PACKAGE, apt_get, timeout)
    except PackageInstallError as error:
        raise BrowserUnavailableError(str(error)) from error
    found = find_chromium()
    if found is None:
        raise BrowserUnavailableError(f"{PACKAGE} was installed but no `chromium` is on the PATH")
    return Chromium(found)


@dataclass(frozen=True)
class Chromium:
    """One Chromium executable; each method is one private, offline, headless run."""

    executable: Path

    def run(self, *arguments: str, timeout: float = 60.0) -> str:
        """Run the browser with OFFLINE_FLAGS, a fresh profile and `arguments`; its standard
        output. BrowserUnavailableError with its output when it fails or outlasts `timeout`;
        its whole process group is stopped either way."""
        with tempfile.TemporaryDirectory(prefix="chromium-profile-") as profile:
            command = [
                str(self.executable),
                *OFFLINE_FLAGS,
                f"--user-data-dir={profile}",
                f"--crash-dumps-dir={profile}",
                *arguments,
            ]
            environment = {**os.environ, "HOME": profile}
            process = subprocess.Popen(
                command,
                env=environment,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                start_new_session=True,
            )
            try:
                output, errors = process.communicate(timeout=timeout)
            except subprocess.TimeoutExpired as error:
                raise BrowserUnavailableError(
                    f"chromium did not finish within {timeout} s: {' '.join(command)}"
                ) from error
            finally:
                stop_process_group(process)
        if process.returncode != 0:
            raise BrowserUnavailableError(
                f"chromium exited {process.returncode}: {' '.join(command)}\n{errors[-4000:]}"
            )
        return output

    def screenshot(self, page: Path, png: Path, width: int, height: int) -> Path:
        """A `width` x `height` PNG of the top of `page` (a local file), as laid out in a window
        of that size, once the page and its images have loaded."""
        self.run(
            f"--screenshot={png}",
            f"--window-size={width},{height}",
            "--hide-scrollbars",
            "--virtual-time-budget=5000",
            page.resolve().as_uri(),
        )
        if not png.is_file():
            raise BrowserUnavailableError(f"chromium wrote no screenshot to {png}")
        return png

    def _probed_dom(self, page: Path, probe: str, *arguments: str) -> str:
        """The DOM of a copy of `page` with `probe` before </body>, once loaded."""
        html = page.read_text(encoding="utf-8")
        if "</body>" not in html:
            raise ValueError(f"{page} has no </body> to put the probe before")
        probed = page.with_name(f".{page.stem}-probe.html")
        before, closing, after = html.rpartition("</body>")
        probed.write_text(before + probe + closing + after, encoding="utf-8")
        try:
            return self.run(
                "--dump-dom", "--virtual-time-budget=5000", *arguments, probed.resolve().as_uri()
            )
        finally:
            probed.unlink()

    def layout(self, page: Path, width: int, height: int) -> dict[str, Any]:
        """Where `page`'s answer ends in a `width` x `height` window, and what overflows
        (LAYOUT_PROBE)."""
        dom = self._probed_dom(page, LAYOUT_PROBE, f"--window-size={width},{height}")
        found = LAYOUT_OUTPUT.search(dom)
        if found is None:
            raise BrowserUnavailableError(f"the layout probe did not run; the DOM:\n{dom[:2000]}")
        return dict(json.loads(found.group(1)))

    def image_sizes(self, page: Path) -> list[tuple[bool, int, int]]:
        """(complete, naturalWidth, naturalHeight) of every <img> of `page`, in document order,
        after loading it: a copy of the page with IMAGE_PROBE, next to it, is loaded instead."""
        dom = self._probed_dom(page, IMAGE_PROBE)
        found = PROBE_OUTPUT.search(dom)
        if found is None:
            raise BrowserUnavailableError(f"the image probe did not run; the DOM:\n{dom[:2000]}")
        sizes = []
        for line in found.group(1).splitlines():
            complete, width, height = line.split()
            sizes.append((complete == "1", int(width), int(height)))
        return sizes


FIGURE_BLUE = (31, 119, 180)
"""matplotlib's first colour (tab:blue): on the screenshot only where a figure was painted."""


def assert_report_renders(
    browser: Chromium, page: Path, figures: Sequence[Path], screenshot: Path, height: int
) -> None:
    """`page` loads in the browser with every <img> decoded at the size of its file among
    `figures` (in order), and a `height`-pixel-tall screenshot of it is a page, not a blank:
    thousands of colours, light and dark, and figure pixels among them."""
    sizes = browser.image_sizes(page)
    expected = []
    for figure in figures:
        with Image.open(figure) as image:
            expected.append((True, image.width, image.height))
    assert sizes == expected, f"images as loaded {sizes}, as written {expected}"
    width = 1280
    browser.screenshot(page, screenshot, width, height)
    with Image.open(screenshot) as image:
        pixels = numpy.asarray(image.convert("RGB"), dtype=numpy.int16)
    assert pixels.shape == (height, width, 3)
    grey = pixels.mean(axis=2)
    assert grey.min() < 60 < 200 < grey.max(), "no dark text on a light page"
    assert grey.std() > 15, f"almost uniform: standard deviation {grey.std():.1f}"
    wide = pixels.astype(numpy.int32)
    packed = (wide[..., 0] << 16) | (wide[..., 1] << 8) | wide[..., 2]
    colours = len(numpy.unique(packed))  # one int per colour: unique(axis=0) takes seconds
    assert colours > 500, f"only {colours} distinct colours"
    blue = numpy.all(numpy.abs(pixels - numpy.array(FIGURE_BLUE)) <= 8, axis=2)
    assert blue.sum() > 200, f"{blue.sum()} pixels of a figure's blue: no figure painted"


def assert_answer_first(browser: Chromium, page: Path) -> None:
    """In a 1280 x 800 window the verdict is seen whole without scrolling, the page is no wider
    than the window, and no element outside a sideways-scrolling box overflows its parent."""
    layout = browser.layout(page, 1280, 800)
    width, height = layout["viewport"]
    assert width == 1280, layout
    assert layout["conclusion_bottom"] is not None, "no verdict on the page"
    assert 0 < layout["answer_bottom"] <= height, f"the verdict ends below the window: {layout}"
    assert layout["page_width"] <= width, f"the page is wider than the window: {layout}"
    assert layout["overflowing"] == [], f"overflowing their box: {layout['overflowing']}"
