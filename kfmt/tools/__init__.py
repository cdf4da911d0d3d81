"""The ``kfmt`` command line: one command table (:mod:`kfmt.tools.cli`) over the library, a module per
command (``dump``, ``diff``, ``explain``, ``convert``, ``synth``, ``demo``) and their shared argument
types (:mod:`kfmt.tools.args`)."""
