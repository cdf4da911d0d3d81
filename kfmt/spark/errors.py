"""A failed kafka-log (or kafka-capture) read reaches the PySpark user as its one line: what, where (file, byte, field) and why.

Spark wraps a task's failure in "Job aborted due to stage failure" and Py4J in "An error occurred while calling
o53.count" and 60-odd lines of JVM stack; the Python data source's failure arrives as a worker's traceback. The
line kfmt wrote (``kafka-log: corrupt batch in <file> at byte <n>: <field>: <why> ...``) is in there, once.
:func:`install` (called by :func:`kfmt.spark.register`) hooks the answer of PySpark's Py4J calls, as PySpark
itself does to turn JVM exceptions into Python ones, and raises :class:`KafkaLogError` with that line when the
failure is one of kfmt's; any other failure passes through unchanged. Spark's own report stays in its log.
"""

from __future__ import annotations

MARK = "kafka-log"
_PREFIXES = ("kafka-log: ", "kafka-log (", "kafka-log writer: ", "kafka-capture: ")


class KafkaLogError(ValueError):
    """A kafka-log read failed; the message is kfmt's one line."""


def one_line(text: str) -> str | None:
    """kfmt's line in a failure's text (the last one, the innermost cause), or None if there is none."""
    found = None
    for line in str(text).splitlines():
        at = min((i for i in (line.find(p) for p in _PREFIXES) if i >= 0), default=-1)
        if at >= 0:
            found = line[at:].strip()
    return found


def _java_text(e) -> str:
    """The messages of a Py4J or PySpark exception's Java exception and its causes."""
    java = getattr(e, "java_exception", None) or getattr(e, "_origin", None)
    parts = [str(e)]
    for _ in range(16):
        if java is None:
            break
        try:
            parts.append(str(java.getMessage() or ""))
            java = java.getCause()
        except Exception:  # the gateway is gone: the text at hand is all there is
            break
    return "\n".join(parts)


def install() -> None:
    """Raise :class:`KafkaLogError` for kfmt's failures from every Py4J call of this process (idempotent)."""
    import py4j.java_gateway

    current = py4j.java_gateway.get_return_value
    if getattr(current, "_kfmt", False):
        return

    def get_return_value(*args, **kwargs):
        try:
            return current(*args, **kwargs)
        except Exception as e:
            line = one_line(_java_text(e)) if _is_spark_error(e) else None
            if line is None:
                raise
            raise KafkaLogError(line) from None

    get_return_value._kfmt = True  # type: ignore[attr-defined]
    py4j.java_gateway.get_return_value = get_return_value  # where Py4J's calls look it up, as PySpark patches it


def _is_spark_error(e: BaseException) -> bool:
    from py4j.protocol import Py4JJavaError

    try:
        from pyspark.errors.exceptions.captured import CapturedException
    except ImportError:  # an older PySpark: Py4J's errors only
        return isinstance(e, Py4JJavaError)
    return isinstance(e, (Py4JJavaError, CapturedException))
