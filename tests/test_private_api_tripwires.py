"""Tripwires for the four places that lean on a dependency's internals.

Each is kept because it buys a measured share of the benchmark (the numbers are in the module's
docstring: common/prepared_reads.py, fleet/channel_layer.py, fleet/consumers.py's
`LiveConsumer.dispatch`; common/broker_transport.py buys workers that outlive a Redis failover
instead of exiting). These tests fail when the dependency is upgraded, so the upgrade is
the moment someone re-reads the internals and re-measures, instead of a silent breakage.
"""

from __future__ import annotations

import inspect
import re
from importlib.metadata import version

import channels.consumer
import channels_redis.core
from django.db.models import F
from django.db.models.query import ModelIterable, get_related_populators
from django.db.models.sql.compiler import SQLCompiler
from kombu.transport import redis as kombu_redis

from fleet.channel_layer import GROUP_SEND_LUA, LiveChannelLayer
from fleet.models import Node

# The versions the internals were read against. An upgrade changes requirements.txt and must
# change these after the reading and the benchmark.
READ_AGAINST = {
    "Django": "5.2.19",
    "channels": "4.3.2",
    "channels-redis": "4.3.0",
    "kombu": "5.7.0",
}


def _squeeze(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def test_the_pinned_dependencies_are_the_versions_the_internals_were_read_against():
    assert {name: version(name) for name in READ_AGAINST} == READ_AGAINST


def test_kombu_still_builds_its_redis_pool_from_the_connections_client_in_connparams():
    """broker_transport refuses `_connparams` once the client is gone: it must still read it."""
    for channel in (kombu_redis.Channel, kombu_redis.SentinelChannel):
        params = inspect.signature(channel._connparams).parameters
        assert list(params) == ["self", "asynchronous"]
    assert "self.connection.client" in inspect.getsource(kombu_redis.Channel._connparams)


def test_channels_redis_still_sends_to_a_group_with_the_script_we_batch():
    """group_send_many runs channels_redis's own Lua for many groups: the script must be its."""
    source = _squeeze(inspect.getsource(channels_redis.core.RedisChannelLayer.group_send))
    assert _squeeze(GROUP_SEND_LUA) in source
    for helper in (
        "_group_key",
        "_map_channel_keys_to_connection",
        "connection",
        "consistent_hash",
    ):
        assert hasattr(LiveChannelLayer, helper), helper
    params = inspect.signature(LiveChannelLayer._map_channel_keys_to_connection).parameters
    assert list(params) == ["self", "channel_names", "message"]


def test_channels_still_closes_old_connections_in_dispatch_and_nowhere_we_skip_more():
    """LiveConsumer.dispatch skips only that hop for live batches: dispatch must do nothing else."""
    source = inspect.getsource(channels.consumer.AsyncConsumer.dispatch)
    assert "aclose_old_connections" in source
    assert "get_handler_name" in source


def test_django_still_has_the_compiler_parts_prepared_reads_use(node):
    """The names and signatures PreparedRead calls, and the attributes it reads after as_sql()."""
    assert str(inspect.signature(get_related_populators)) == "(klass_info, select, db)"
    assert str(inspect.signature(SQLCompiler.apply_converters)) == "(self, rows, converters)"
    assert str(inspect.signature(SQLCompiler.get_converters)) == "(self, expressions)"
    queryset = Node.objects.select_related("rack").filter(pk=node.pk)
    assert queryset._iterable_class is ModelIterable
    assert queryset._prefetch_related_lookups == () and not queryset._known_related_objects
    compiler = queryset.query.get_compiler(queryset.db)
    compiler.as_sql()
    assert {"model", "select_fields", "related_klass_infos"} <= set(compiler.klass_info)
    assert isinstance(compiler.col_count, int) and compiler.select
    annotated = Node.objects.annotate(doubled=F("pk") * 2).filter(pk=node.pk)
    compiler = annotated.query.get_compiler(annotated.db)
    compiler.as_sql()
    assert compiler.annotation_col_map == {"doubled": compiler.col_count - 1}
