"""``python -m timem``: the ``timem`` command (:func:`timem.cli.main`), for running a checkout without installing it."""

from timem.cli import main

if __name__ == "__main__":
    main()
