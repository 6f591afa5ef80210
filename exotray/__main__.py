"""`python -m exotray`. Importing this module runs nothing: tools that walk the package
(pkgutil, pydoc, a test that imports every module) must not start the app and its agent."""

import sys

from exotray.cli.main import main

if __name__ == "__main__":
    sys.exit(main())
