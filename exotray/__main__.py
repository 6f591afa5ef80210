import sys

from exotray.cli import main

sys.exit(main())
