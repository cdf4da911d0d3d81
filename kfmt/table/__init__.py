"""Logs as tables: read whole log directories (paths, globs, store URIs) planned into slices (:mod:`.plan`,
with the options of :mod:`.options`), each slice read into Arrow (:mod:`.slices`), as ``read_arrow``
(:mod:`.read`) and the Spark source read them, and tables written by kfmt committed so that a
reader sees them whole or not at all (:mod:`.commit`).

May import: kfmt.runtime, kfmt.codec, kfmt.storage, kfmt.payloads, kfmt.logdir, kfmt.log (never the tools
or Spark)."""
