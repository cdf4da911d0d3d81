"""kfmt's planner, asked by the ``kafka-log`` source in the JVM (``kfmt/runtime/jvm``, class ``kfmt.jvm.Planner``).

There is one planner: :class:`kfmt.table.plan.LogReader` (the options, the log directory's rules, suffix folders,
replicas, read_committed's transactions, offset and time bounds, kfmt tables' commits). The JVM source does not
carry a second copy of those rules in Java; on the driver it sends this module a request and gets the plan back:

- from PySpark, through the session's Py4J gateway (:func:`install`, called by :func:`kfmt.spark.register`): the
  driver's own interpreter plans, with kfmt already imported (no process started);
- from Scala, Java or SQL with only the jar, by running ``python -m kfmt.spark.planner`` (the interpreter named by
  ``spark.kfmt.python``, else ``$KFMT_PYTHON``, else ``python3``), request on stdin, answer on stdout.

The request is JSON: ``{"options": {...}, "defaults": {...}, "columns": [...] | null}`` (``defaults``: the session's
sizing, as :func:`kfmt.spark.datasource.session_defaults` takes it; ``columns``: a schema the user gave, checked as
the Python source checks it). The answer is one of ``{"plan": <kfmt.jvm.Plan JSON>}``, ``{"python": why}`` (the
JVM engine does not decode this yet: the source hands the read to kfmt's Python data source) or
``{"error": one line}``.

A stream's requests (``kfmt.jvm.LogStream``, ``spark.readStream.format("kafka-log")``) add ``"stream": {"id": ...,
"call": ..., "start": offset, "end": offset, "limit": rows, "until": offset}``, offsets as Spark's Kafka source writes them
(``{"topic": {"partition": next offset}}``). The calls are :class:`kfmt.spark.stream.KafkaLogStreamReader`'s, so a
stream's micro-batches are cut by the one definition whichever engine decodes them: ``open`` (``{"plan": ...}``
with the read's options and no slices, and ``max_offsets``, maxOffsetsPerTrigger as the reader took it; or
``{"python": why}``), ``initial`` and ``latest`` (``{"offset": ...}``; ``until``: no further, as Trigger.AvailableNow reads),
``plan`` (the slices from ``start`` to ``end``), ``commit`` and ``close``. The driver's interpreter keeps each
stream's reader between calls (what it learnt of each partition's last segment); a planner run as a process
starts afresh each call, and gets the same answers.
"""

from __future__ import annotations

import json
import os
import sys


def answer(request: dict, stores=None) -> dict:
    """The plan for one read (see the module's doc); never raises for a bad request. ``stores``: the driver JVM's
    ``kfmt.jvm.Stores`` maker, when this interpreter is the driver's: a store of a scheme the JVM has a Hadoop
    FileSystem for is then listed and read through it where pyarrow.fs cannot reach it (kfmt.spark.hadoop)."""
    from kfmt.table.commit import CommitError

    try:
        with _hadoop_stores(request, stores):
            return _answer(request)
    except (ValueError, TypeError, KeyError, OSError, CommitError) as e:
        text = str(e) if str(e).startswith("kafka-log") else f"kafka-log: {e}"
        return {"error": " ".join(text.split())}


def _hadoop_stores(request: dict, stores):
    """kfmt.storage.provided with the driver's Hadoop FileSystems for the request's ``jvm_schemes`` (nothing
    provided without ``stores`` or such schemes)."""
    import contextlib

    from kfmt.storage import provided

    schemes = request.get("jvm_schemes") or ()
    if stores is None or not schemes:
        return contextlib.nullcontext()
    from kfmt.spark.hadoop import provided as hadoop
    from kfmt.table.options import _int_opt

    seconds = _int_opt({str(k): str(v) for k, v in (request.get("options") or {}).items()}, "read_timeout", 120)
    return provided(hadoop(stores(), schemes, seconds * 1000))


def _answer(request: dict) -> dict:
    from kfmt.spark.jvm import plan, refusal, refusal_by_options
    from kfmt.spark.source import KafkaLogReader, check_columns

    options = {str(k): str(v) for k, v in (request.get("options") or {}).items()}
    engine = str(options.pop("engine", "auto")).lower()
    if engine not in ("auto", "jvm", "python"):
        raise ValueError(f"kafka-log: engine must be auto, jvm or python, not {engine!r}")
    columns = request.get("columns")
    if columns is not None:
        check_columns([(str(name), str(kind)) for name, kind in columns])
    if request.get("write") is not None:
        return _write(request["write"], options, engine)
    if engine == "python":
        return {"python": "engine=python"}
    why = refusal_by_options(options)
    if why is not None and engine == "auto":
        return {"python": why}  # planned once, by the Python data source
    if request.get("stream") is not None:
        return _stream(request, options, engine)
    reader = KafkaLogReader(options, None, request.get("defaults") or {})
    why = refusal(reader, options, request.get("jvm_schemes") or ())
    if why is None:
        made = plan(reader)
        return {"plan": json.dumps(made), "groups": len(made["groups"])}
    if engine == "jvm":
        raise ValueError(f"kafka-log: the jvm engine does not read this yet: {why}; use engine=auto or python")
    return {"python": why}


def _writer(ask: dict, options: dict):
    """The Python writer whose rules a JVM write follows: its options checked as the Python data source checks them
    (KafkaLogWriter, or KafkaLogStreamWriter for a stream); ``ask["staging"]``, when given, its staging folder."""
    from kfmt.spark.source import KafkaLogWriter
    from kfmt.spark.stream import KafkaLogStreamWriter

    w = KafkaLogStreamWriter(options) if ask.get("stream") else KafkaLogWriter(options, bool(ask.get("overwrite")))
    if ask.get("staging"):
        w.staging = str(ask["staging"])
    return w


def _write(ask: dict, options: dict, engine: str) -> dict:
    """A write's calls (``kfmt.jvm.LogWrite``): ``open`` answers the settings the executors encode with
    (``{"write": {...}}``), or ``{"python": why}`` where the JVM does not write (a store by URI: kfmt's Python data
    source writes it); ``commit`` and ``abort`` are the Python writer's own, so a job is published by kfmt's one
    commit (kfmt.spark.writer.commit_partitions) whichever engine encoded it."""
    from types import SimpleNamespace

    from kfmt.codec.formats import by_magic
    from kfmt.storage import is_uri

    call = str(ask.get("call"))
    w = _writer(ask, options)
    if call == "open":
        if engine == "python":
            return {"python": "engine=python"}
        if is_uri(w.path) or w.storage:
            if engine == "jvm":
                raise ValueError(
                    "kafka-log: the jvm engine does not write to a store by URI yet; use engine=auto or python"
                )
            return {"python": "writing to a store by URI"}
        return {"write": {"path": os.path.abspath(w.path), "format": by_magic()[w.magic].FORMAT_ID, "magic": w.magic,
                          "codec": w.codec, "batch_records": w.batch_records, "keep_batches": w.keep_batches}}  # fmt: skip
    messages = [SimpleNamespace(files=[tuple(f) for f in m["files"]], skipped=int(m.get("skipped", 0)))
                for m in ask.get("messages") or []]  # fmt: skip
    if call == "commit":
        if ask.get("stream"):
            w.commit(messages, int(ask["batch_id"]))
        else:
            w.commit(messages)
        return {}
    if call == "abort":
        w.abort(messages)
        return {}
    raise ValueError(f"kafka-log: the planner has no write call {call!r}")


#: the streams this interpreter plans, by id: their readers keep what they learnt of each partition's last segment
_STREAMS: dict = {}


def _stream(request: dict, options: dict, engine: str) -> dict:
    """One call of a stream's (see the module's doc)."""
    from types import SimpleNamespace

    from kfmt.spark.jvm import plan, refusal
    from kfmt.spark.stream import KafkaLogStreamReader

    ask = request["stream"]
    call, sid = str(ask["call"]), str(ask["id"])
    if call == "close":
        _STREAMS.pop(sid, None)
        return {}
    reader = _STREAMS.get(sid)
    if reader is None:
        reader = _STREAMS[sid] = KafkaLogStreamReader(options, None, request.get("defaults") or {})

    def offset(name: str):
        return None if ask.get(name) is None else json.loads(ask[name])

    if call == "open":
        why = refusal(reader.batch, options, request.get("jvm_schemes") or ())
        if why is None:
            return {"plan": json.dumps(plan(reader.batch, [])), "max_offsets": reader.max_offsets}
        _STREAMS.pop(sid, None)
        if engine == "jvm":
            raise ValueError(f"kafka-log: the jvm engine does not read this yet: {why}; use engine=auto or python")
        return {"python": why}
    if call == "initial":
        return {"offset": _offset(reader.initialOffset())}
    if call == "latest":
        limit = None if ask.get("limit") is None else SimpleNamespace(max_rows=int(ask["limit"]))
        return {"offset": _offset(reader.latestOffset(offset("start"), limit, offset("until")))}
    if call == "plan":
        groups = [g.slices for g in reader.partitions(offset("start") or {}, offset("end"))]
        return {"plan": json.dumps(plan(reader.batch, groups)), "groups": len(groups)}
    if call == "commit":
        reader.commit(offset("end"))
        return {}
    raise ValueError(f"kafka-log: the planner has no stream call {call!r}")


def _offset(o: dict) -> str:
    """A stream offset as the JVM keeps it: one spelling for one offset (Spark compares offsets by their JSON)."""
    return json.dumps(o, sort_keys=True, separators=(",", ":"))


class _Callback:
    """The planner as the JVM's ``kfmt.jvm.PlanCallback`` (a Py4J callback object); ``jvm``: the gateway's view of
    the driver JVM (its stores are read through it)."""

    def __init__(self, jvm=None):
        self.jvm = jvm

    def plan(self, request: str) -> str:
        stores = None if self.jvm is None else self.jvm.kfmt.jvm.Stores.session
        return json.dumps(answer(json.loads(request), stores))

    class Java:
        implements = ["kfmt.jvm.PlanCallback"]


def install(spark) -> bool:
    """Make the driver's interpreter the JVM source's planner for this session's JVM (False: no JVM here, as
    with Spark Connect, or the jar is not loaded)."""
    try:
        from pyspark.java_gateway import ensure_callback_server_started

        sc = spark.sparkContext
        gateway = sc._gateway
        ensure_callback_server_started(gateway)
        sc._jvm.kfmt.jvm.Planner.use(_Callback(sc._jvm))
        return True
    except Exception:
        return False


def main(argv=None) -> int:
    """``python -m kfmt.spark.planner``: one request on stdin, its answer on stdout. With ``KFMT_STORES_PORT`` and
    ``KFMT_STORES_TOKEN`` (set by the JVM asking, for a read naming stores by URI), that JVM's Hadoop FileSystems
    are reached through its Py4J gateway (kfmt.jvm.Stores), as from the driver's own interpreter."""
    import os

    del argv
    try:
        request = json.loads(sys.stdin.read())
    except ValueError as e:
        print(json.dumps({"error": f"kafka-log: the planner's request is not JSON: {e}"}))
        return 0
    port = os.environ.get("KFMT_STORES_PORT")
    if not port:
        print(json.dumps(answer(request)))
        return 0
    from py4j.java_gateway import GatewayParameters, JavaGateway

    gateway = JavaGateway(gateway_parameters=GatewayParameters(
        port=int(port), auth_token=os.environ.get("KFMT_STORES_TOKEN"), auto_convert=True))  # fmt: skip
    try:
        print(json.dumps(answer(request, lambda: gateway.entry_point)))
    finally:
        gateway.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
