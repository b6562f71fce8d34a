"""The old name of ``leasehold.core.fire_times``, kept for compatibility."""

from leasehold.core.fire_times import RESERVED_KEY_PREFIX as RESERVED_KEY_PREFIX
from leasehold.core.fire_times import CatchUp as CatchUp
from leasehold.core.fire_times import Firing as Firing
from leasehold.core.fire_times import Schedule as Schedule
from leasehold.core.fire_times import ScheduleSpec as ScheduleSpec
from leasehold.core.fire_times import check_cron as check_cron
from leasehold.core.fire_times import first_fire as first_fire
from leasehold.core.fire_times import idempotency_key as idempotency_key
from leasehold.core.fire_times import latest_fire as latest_fire
from leasehold.core.fire_times import next_fire as next_fire
from leasehold.core.fire_times import plan_fires as plan_fires
from leasehold.core.fire_times import zone as zone
from leasehold.model import schedule_idempotency_key as schedule_idempotency_key
