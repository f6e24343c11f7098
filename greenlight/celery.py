"""The Celery app: stock set-up, configuration from Django settings under CELERY_."""

import os

from celery import Celery, bootsteps
from celery.signals import task_prerun, worker_init, worker_ready
from click import Option

from common.broker_transport import register as register_broker_transports
from common.gc_tuning import settle_long_lived_objects
from common.user_agent import name_this_worker

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "greenlight.settings")

# A worker must outlive its broker's failover (common/broker_transport.py says why).
register_broker_transports()
app = Celery("greenlight")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


class SiteWorker(bootsteps.StartStopStep):
    """`celery -A greenlight worker --site NAME`: consume only that site's queue (its runs'
    steps: Redfish, boot media, the agents' work) and say every half minute that the site is
    served. Every worker names itself (and its site) in the User-Agent of its BMC requests.
    Django is set up only once the worker starts, hence the imports inside."""

    requires = {"celery.worker.components:Timer"}

    def __init__(self, worker, site: str | None = None, **options) -> None:
        super().__init__(worker, **options)
        self.site = site
        self.tref = None
        name_this_worker(worker.hostname, site)
        if site:
            from provisioning.site_work import site_queue

            queues = worker.app.amqp.queues
            queues.select_add(site_queue(site))
            queues.select([site_queue(site)])

    def start(self, worker) -> None:
        if not self.site:
            return
        from provisioning.site_work import SITE_WORKER_BEAT_S

        self.beat(worker)
        self.tref = worker.timer.call_repeatedly(SITE_WORKER_BEAT_S, self.beat, (worker,))

    def beat(self, worker) -> None:
        from django.db import close_old_connections

        from provisioning.site_work import record_worker_alive

        close_old_connections()
        if self.site:
            record_worker_alive(self.site, worker.hostname)

    def stop(self, worker) -> None:
        if self.tref is not None and self.site:
            from provisioning.site_work import record_worker_stopped

            self.tref.cancel()
            record_worker_stopped(self.site, worker.hostname)


app.user_options["worker"].add(
    Option(["--site"], default=None, help="serve only this site's queue (its hall's BMC work)")
)
app.steps["worker"].add(SiteWorker)


@worker_init.connect
def shorten_interpreter_turns(**_: object) -> None:
    """Hand the interpreter lock over more often in a worker (settings say why)."""
    import sys

    from django.conf import settings

    sys.setswitchinterval(settings.GREENLIGHT_WORKER_SWITCH_INTERVAL_MS / 1000)


@worker_ready.connect
def settle_worker_memory(**_: object) -> None:
    """Freeze what the started worker holds out of the garbage collector (common/gc_tuning.py)."""
    from django.conf import settings

    settle_long_lived_objects(settings.GREENLIGHT_GC_YOUNG_THRESHOLD)


@task_prerun.connect
def recycle_old_db_connections(task=None, **_: object) -> None:
    """Replace this thread's connection only when it is past CONN_MAX_AGE or broken.

    CELERY_DB_REUSE_MAX stops Celery from closing it around every task; this keeps Django's
    own lifetime and health rules, as a request would. An eager task runs inside its caller's
    transaction, whose connection is not ours to close.
    """
    if task is not None and getattr(task.request, "is_eager", False):
        return
    from django.db import close_old_connections

    close_old_connections()


if os.environ.get("GREENLIGHT_QUERY_LOG_DIR"):
    from common.instrumentation import install_celery_hooks

    install_celery_hooks()
