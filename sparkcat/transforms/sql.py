"""The SQL transform (``org.sparkcat.transforms.Sql`` / ``sql``): a Spark SQL SELECT over the batch.

``transforms.X.query`` is a SELECT ``FROM records``, whose columns are ``key``, ``value``,
``topic``, ``timestamp`` (epoch ms) and ``headers``, plus the record positions sparkcat needs
(``_task``, ``_partition``, ``_offset``; on a sink connector ``_task``, ``_orig_topic``,
``_orig_partition``, ``_orig_offset`` and the Kafka ``partition`` and ``offset``). The statement
is analysed against the batch schema when the connector's query starts (a sink's: its first
batch), so a bad column fails the connector before any record is written; its result must keep
every ``_``-prefixed column (``SELECT *, ...`` or naming them) and a ``value``.

The statement may only project and filter the batch: any other relation (a table, a file through
``text.`/path```, a table function), a join, aggregate, window, sort or generator, a subquery and
Java reflection (``reflect``/``java_method``) are refused. A connector config is user input; these
would read the driver's files, call Java, or move one task's records into another Spark partition
(which breaks per-task offsets).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from pyspark.sql import Column

from sparkcat.api.config import NO_DEFAULT, ConfigDef, Type
from sparkcat.errors import ConfigError
from sparkcat.transforms.registry import missing, register_transform
from sparkcat.transforms.frame import DataError, Records

__all__ = ["SQL_TRANSFORM", "POSITION_COLUMNS"]

SQL_TRANSFORM = "org.sparkcat.transforms.Sql"
POSITION_COLUMNS = ("_task", "_partition", "_offset")
VIEW = "records"
# The view name is session-wide: two connectors starting at once must not swap each other's batch.
_VIEW_LOCK = threading.Lock()
# Analysed plan nodes a statement may add above the batch: projections, filters and their names.
_ALLOWED_NODES = frozenset({"Project", "Filter", "SubqueryAlias", "View", "WithCTE", "CTERelationDef",
                            "CTERelationRef"})
_REFUSED_EXPRESSIONS = ("Reflection", "Subquery", "Exists", "ListQuery")


@dataclass
class Sql:
    """Runs ``query`` over the batch (view ``records``); tombstones and everything else as the SELECT says."""

    query: str

    def apply(self, records: Records, alias: str, where: Column | None) -> Records:
        if where is not None:
            raise DataError(f"transforms.{alias}: the sql transform takes no predicate; put the condition in its "
                            "WHERE clause", {f"transforms.{alias}.predicate": ["the sql transform takes no predicate"]})
        df = records.df.withColumnRenamed(records.timestamp, "timestamp")
        spark = df.sparkSession
        with _VIEW_LOCK:
            df.createOrReplaceTempView(VIEW)
            try:
                out = spark.sql(self.query)
                out.schema  # analyse now, against this batch schema
                refused = _refused_part(out._jdf.queryExecution().analyzed(),
                                        df._jdf.queryExecution().analyzed())
            except Exception as e:
                key = f"transforms.{alias}.query"
                message = f"{key}: the statement does not run on the batch: {str(e).splitlines()[0]}"
                raise DataError(message, {key: [message]}) from None
            finally:
                spark.catalog.dropTempView(VIEW)
        if refused:
            key = f"transforms.{alias}.query"
            message = (f"{key}: the statement may only select and filter the records (FROM records); "
                       f"{refused} is not allowed")
            raise DataError(message, {key: [message]})
        # every internal column (positions, a sink's original coordinates and raw bytes, _keep) must stay
        needed = [c for c in records.df.columns if c.startswith("_")] + ["value"]
        lost = [c for c in needed if c not in out.columns]
        if lost:
            key = f"transforms.{alias}.query"
            message = (f"{key}: the statement's result lacks {', '.join(lost)}; keep the record columns "
                       "(SELECT *, ... or name them)")
            raise DataError(message, {key: [message]})
        return records.with_df(out.withColumnRenamed("timestamp", records.timestamp))


def _refused_part(node, batch) -> str | None:
    """The first plan node or expression of ``node`` the SQL transform refuses; None when all are allowed."""
    if node.sameResult(batch):
        return None  # the batch itself (the records view)
    name = node.nodeName()
    if name not in _ALLOWED_NODES:
        return name
    expressions = node.expressions().iterator()
    while expressions.hasNext():
        refused = _refused_expression(expressions.next())
        if refused:
            return refused
    children = node.children().iterator()
    while children.hasNext():
        refused = _refused_part(children.next(), batch)
        if refused:
            return refused
    return None


def _refused_expression(expression) -> str | None:
    kind = expression.getClass().getSimpleName()
    if any(word in kind for word in _REFUSED_EXPRESSIONS):
        return kind
    children = expression.children().iterator()
    while children.hasNext():
        refused = _refused_expression(children.next())
        if refused:
            return refused
    return None


def _sql(settings: dict[str, str], prefix: str) -> Sql:
    query = (settings.get("query") or "").strip()
    if not query:
        raise ConfigError(missing(prefix + "query"), {prefix + "query": [missing(prefix + "query")]})
    if query.split(None, 1)[0].upper() not in ("SELECT", "WITH"):
        message = f"Invalid value {query} for configuration {prefix}query: must be a SELECT statement"
        raise ConfigError(message, {prefix + "query": [message]})
    return Sql(query)


register_transform([SQL_TRANSFORM, "sql", "Sql"], _sql, ConfigDef().define(
    "query", Type.STRING, NO_DEFAULT, documentation="A Spark SQL SELECT ... FROM records over the batch."))
