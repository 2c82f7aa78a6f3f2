"""Sphinx extension: copy the vendored MathJax, RequireJS and ipywidgets HTML manager into the build.

The book must render math and saved widgets with no network (issue #9 §2). ``_config.yml`` points
Sphinx (``mathjax_path``) and myst-nb (``nb_ipywidgets_js``) at ``_static/offline/...``; this
extension fills that folder from ``tools/book_assets/node_modules`` (installed by ``make vendor``,
i.e. ``npm ci`` on the pinned ``package-lock.json`` next to this file) when the HTML build finishes.

Why not a source ``_static/`` folder: Jupyter Book 1.x adds a root ``_static/`` to
``html_static_path`` and then links every ``.js``/``.css`` in it from every page; we want each
asset only where Sphinx/myst-nb ask for it (MathJax on pages with math, the widget manager on pages
with widget state). Copying into the output also keeps the ~10 MB of assets out of the sources.

Only the files the pages load are copied: MathJax's ``tex-mml-chtml`` component with what it can
load lazily (TeX extensions, CHTML fonts, menu, a11y, speech rule engine), ``require.js``, and the
html-manager's ``embed-amd.js`` with its woff/woff2 icon fonts. Left out: the other MathJax combined components
and its SVG output, the html-manager's ``embed.js``/source maps, and every other CDN reference on
the pages (e.g. matplotlib's animation CSS, thebe), which are not among these three.
"""
from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path

from sphinx.errors import ExtensionError
from sphinx.util import logging

LOGGER = logging.getLogger(__name__)
NODE_MODULES = Path(__file__).resolve().parent / "node_modules"
VENDOR_SUBDIR = "offline"  # under _static/ (pydata-sphinx-theme already owns _static/vendor/)


@dataclass(frozen=True)
class VendoredPackage:
    """One npm package: which of its files go where under ``_static/offline/``."""

    package: str              # npm name, folder under node_modules
    source_dir: str           # folder inside the package the globs are relative to
    target_dir: str           # folder under _static/offline/
    globs: tuple = field(default_factory=tuple)  # files (or whole folders) to copy
    entry: str = ""           # the file a page loads, relative to source_dir


PACKAGES = (
    VendoredPackage(
        package="mathjax", source_dir="es5", target_dir="mathjax",
        globs=("tex-mml-chtml.js", "input", "output/chtml", "output/chtml.js", "a11y", "ui",
               "sre", "adaptors"),
        entry="tex-mml-chtml.js"),
    VendoredPackage(
        package="requirejs", source_dir="", target_dir="requirejs",
        globs=("require.js",), entry="require.js"),
    VendoredPackage(
        package="@jupyter-widgets/html-manager", source_dir="dist", target_dir="html-manager",
        globs=("embed-amd.js", "*.woff2", "*.woff"),  # icon fonts; .eot/.ttf/.svg: old browsers only
        entry="embed-amd.js"),
)


def entry_paths() -> dict:
    """``{npm package: path under _static/}`` of the file each page loads (what _config.yml uses)."""
    return {p.package: f"{VENDOR_SUBDIR}/{p.target_dir}/{p.entry}" for p in PACKAGES}


def missing_sources(node_modules: Path = NODE_MODULES) -> list:
    """Entry files absent from ``node_modules`` (empty when ``make vendor`` has run)."""
    return [str(node_modules / p.package / p.source_dir / p.entry) for p in PACKAGES
            if not (node_modules / p.package / p.source_dir / p.entry).is_file()]


def _require_sources(node_modules: Path) -> None:
    missing = missing_sources(node_modules)
    if missing:
        raise ExtensionError("offline book assets are not installed (run `make vendor`, i.e. "
                             f"`npm ci --prefix tools/book_assets`): missing {missing}")


def copy_vendored(static_dir: Path, node_modules: Path = NODE_MODULES) -> list:
    """Copy every package's selected files under ``static_dir/offline/``; return the entry files."""
    _require_sources(node_modules)
    entries = []
    for spec in PACKAGES:
        source = node_modules / spec.package / spec.source_dir
        target = static_dir / VENDOR_SUBDIR / spec.target_dir
        for pattern in spec.globs:
            matches = sorted(source.glob(pattern))
            if not matches:
                raise ExtensionError(f"{spec.package}: nothing matches {pattern!r} in {source}")
            for path in matches:
                destination = target / path.relative_to(source)
                destination.parent.mkdir(parents=True, exist_ok=True)
                if path.is_dir():
                    shutil.copytree(path, destination, dirs_exist_ok=True)
                else:
                    shutil.copy2(path, destination)
        entries.append(target / spec.entry)
    return entries


def _check_config(app) -> None:
    """Fail early when the assets are missing; warn when the config still points at a CDN."""
    if app.builder.format != "html":
        return
    _require_sources(NODE_MODULES)
    remote = [p for p in [app.config.mathjax_path, *getattr(app.config, "nb_ipywidgets_js", {})]
              if "://" in p]
    if remote:
        LOGGER.warning(f"offline_assets: these still load from the network: {remote}; "
                       f"point them at {sorted(entry_paths().values())}")


def _copy_on_finish(app, exception) -> None:
    if exception is None and app.builder.format == "html":
        entries = copy_vendored(Path(app.builder.outdir) / "_static")
        LOGGER.info(f"offline_assets: copied {len(entries)} vendored packages into _static/offline")


def setup(app):
    app.connect("builder-inited", _check_config)
    app.connect("build-finished", _copy_on_finish)
    return {"parallel_read_safe": True, "parallel_write_safe": True, "version": "1.0"}
