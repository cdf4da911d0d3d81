"""The codecs and formats: the registry of generated formats and their backends (:mod:`.formats`), and
batches encoded from records (:mod:`.encode`). Reading a log's bytes back is :mod:`kfmt.log`'s.

May import: kfmt.runtime and the generated packages (never kfmt.log, kfmt.logdir, kfmt.table, the tools or
Spark)."""
