"""`python -m tether` runs the same CLI as the `tether` console script."""

from tether.cli import main

raise SystemExit(main())
