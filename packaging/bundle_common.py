"""What both PyInstaller specs (packaging/linux, packaging/macos) put into the bundle.

Imported by the spec files (which add this directory to sys.path; the directory itself is
not a package, so it never shadows the `packaging` distribution PyInstaller uses).
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LAUNCHER = ROOT / "packaging" / "launcher.py"
RESOURCES = ROOT / "resources"

# Imported by name at run time, so PyInstaller's analysis cannot see them:
HIDDEN_PACKAGES = [
    "exotray",  # every sub-command's module (cli imports most of them lazily)
    "zeroconf",  # Cython modules that import each other from C
    "uvicorn",  # loop/protocol/lifespan implementations chosen by string
]
HIDDEN_MODULES = [
    "PySide6.QtSvg",  # the SVG icon engine and image format plugins need libQt6Svg
    "PySide6.QtOpenGL",  # pyqtgraph imports these two by computed names
    "PySide6.QtOpenGLWidgets",
    "h11",
]
EXCLUDES = [
    "tkinter", "_tkinter", "PyQt5", "PyQt6", "PySide2", "matplotlib", "IPython", "scipy",
    "pandas", "pytest", "_pytest", "hypothesis", "pytestqt", "setuptools", "pip",
    "pyqtgraph.opengl", "pyqtgraph.examples", "OpenGL", "cupy", "numba", "h5py",
    # pyqtgraph imports these only optionally (a FailedImport placeholder when absent;
    # it needs QtOpenGL itself), and Pillow is needed only to build the macOS .icns.
    "PIL", "PySide6.QtTest", "PySide6.QtNetwork",
]


def hiddenimports() -> list[str]:
    from PyInstaller.utils.hooks import collect_submodules

    names = list(HIDDEN_MODULES)
    for pkg in HIDDEN_PACKAGES:
        names += collect_submodules(pkg)
    return sorted(set(names))


def datas() -> list[tuple[str, str]]:
    """(source, destination dir) pairs: the package exotray.resources with its icons.

    resources/ becomes exotray.resources only through setuptools' package-dir, which
    PyInstaller's analysis does not follow (from an editable install it finds nothing), so
    the package is collected as plain files: PyInstaller's importer falls back to the
    files next to the bundle's archive, and importlib.resources.files() then finds the
    icons on disk as in an unfrozen install.
    """
    icons = RESOURCES / "icons"
    out = [
        (str(RESOURCES / "__init__.py"), "exotray/resources"),
        (str(icons / "__init__.py"), "exotray/resources/icons"),
    ]
    out += [(str(p), "exotray/resources/icons") for p in sorted(icons.glob("*.svg"))]
    out += [(str(p), "exotray/resources/icons/png") for p in sorted((icons / "png").glob("*.png"))]
    if not out:
        raise SystemExit(f"no icons in {icons}")
    return out
