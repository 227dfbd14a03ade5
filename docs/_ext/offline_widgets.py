"""The lessons' widgets on the site without a CDN: the widget manager served by the site
itself, and each widget's static picture where no live view is drawn.

myst-nb draws a saved widget with ipywidgets' HTML manager (``@jupyter-widgets/html-manager``)
and RequireJS, which it loads from public CDNs by default: offline, and in the air-gapped
rooms where forensics is often done, the widgets are then blank space.  This extension

* fetches both from the npm registry at pinned versions (each checked against the
  registry's sha512 integrity) into a cache outside the repository — nothing fetched is
  committed — and serves them from ``_static/widgets/``, with ``nb_ipywidgets_js``
  pointing there;
* drops the one remote resource the manager's bundle would load itself (JupyterLab's
  theme imports Roboto Mono from Google Fonts; the page's own monospace stands in), and
  gives it no CDN to load a third-party widget module from (the store map's canvas is
  anywidget's: where its module cannot be loaded, the picture stays);
* keeps both of a widget output's forms on the page: the live view and the picture
  (``text/html``, :func:`rmqlab.widgets.base.picture`), which ``_static/rmqlab-widgets.js``
  hides once the live view is drawn.

The cache is ``$RMQLAB_DOCS_CACHE`` or ``~/.cache/rmqlab-docs``.
"""

from __future__ import annotations

import base64
import hashlib
import io
import os
import re
import shutil
import tarfile
import urllib.request
from pathlib import Path

from docutils import nodes
from sphinx.transforms.post_transforms import SphinxPostTransform

REGISTRY = "https://registry.npmjs.org"
#: npm package -> (version, the registry's dist.integrity, files kept: archive path -> served name)
PACKAGES = {
    "@jupyter-widgets/html-manager": ("1.0.15", "sha512-5thBIV6ymNgmPVOHvzx+gGy8ZSKmSazhtGw4/c4xJDVzRhG9PTeQsRjF3FUTopvFi//SABeNz1yp47bCrJ3CQA==", "package/dist/"),
    "requirejs": ("2.3.7", "sha512-DouTG8T1WanGok6Qjg2SXuCMzszOo0eHeH9hDZ5Y4x8Je+9JB38HdTLT4/VA8OaUhBa0JPVHJ0pyBkM1z+pDsw==", "package/require.js"),
}
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
#: JupyterLab's theme, inside the manager's bundle: the one resource it fetches from elsewhere
_REMOTE_IMPORT = re.compile(rb"@import url\('https://fonts\.googleapis\.com/[^']*'\);?")
#: what the manager's package holds beside the bundle myst-nb loads (its other builds, source maps)
_SKIP = (".map", ".LICENSE.txt", "/embed.js", "/libembed-amd.js")


def cache_dir() -> Path:
    return Path(os.environ.get("RMQLAB_DOCS_CACHE") or Path.home() / ".cache" / "rmqlab-docs")


def _tarball(name: str, version: str, integrity: str) -> bytes:
    url = f"{REGISTRY}/{name}/-/{name.rsplit('/', 1)[-1]}-{version}.tgz"
    try:
        with urllib.request.urlopen(url, timeout=120) as r:
            data = r.read()
    except OSError as err:
        raise RuntimeError(f"the site serves the widget manager itself, fetched once from the npm registry: {url}: {err} "
                           f"(or put a copy in {cache_dir()}, as a machine with access made it)") from err
    algo, want = integrity.split("-", 1)
    got = base64.b64encode(hashlib.new(algo, data).digest()).decode()
    if got != want:
        raise RuntimeError(f"{url}: {algo} {got} is not the pinned {want}")
    return data


def served_files() -> Path:
    """The folder whose ``widgets/`` the site serves under ``_static``, fetched on first use."""
    root = cache_dir() / "static"
    out = root / "widgets"
    stamp = out / ".versions"
    want = "\n".join(f"{n}@{v[0]}" for n, v in sorted(PACKAGES.items())) + f"\n{_SKIP}"
    if stamp.exists() and stamp.read_text() == want:
        return root
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    for name, (version, integrity, keep) in PACKAGES.items():
        with tarfile.open(fileobj=io.BytesIO(_tarball(name, version, integrity))) as tar:
            for member in tar.getmembers():
                if not member.isfile() or not member.name.startswith(keep) or member.name.endswith(_SKIP):
                    continue
                data = tar.extractfile(member).read()
                if member.name.endswith(".js"):
                    data = _REMOTE_IMPORT.sub(b"", data)
                (out / Path(member.name).name).write_bytes(data)
    stamp.write_text(want)
    return root


class KeepWidgetPicture(SphinxPostTransform):
    """A widget output's picture (``text/html``) moved into its live view's container, so
    that myst-nb's choice of one form per output keeps both (it runs just after this)."""

    default_priority = 3  # myst-nb's SelectMimeType is 4

    def run(self, **kwargs) -> None:
        for bundle in list(self.document.findall(nodes.container)):
            if bundle.get("nb_element") != "mime_bundle":
                continue
            forms = {c.get("mime_type"): c for c in bundle.children}
            view, pic = forms.get(WIDGET_VIEW), forms.get("text/html")
            if view is None or pic is None:
                continue
            bundle.remove(pic)
            view.children = [*pic.children, *view.children]


def _configure(app, config) -> None:
    root = served_files()
    config.html_static_path = [*config.html_static_path, str(root)]
    # no CDN for third-party widget modules: a relative address the site does not serve
    config.nb_ipywidgets_js = {
        "widgets/require.js": {},
        "widgets/embed-amd.js": {"data-jupyter-widgets-cdn": "widgets/", "data-jupyter-widgets-cdn-only": ""},
    }


def setup(app):
    app.connect("config-inited", _configure, priority=900)
    app.add_post_transform(KeepWidgetPicture)
    app.add_js_file("rmqlab-widgets.js")
    return {"parallel_read_safe": True, "parallel_write_safe": True}
