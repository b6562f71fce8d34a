"""Where "now" comes from: kept here for the code that imports it from ``core``; the clock
lives in ``leasehold.clock``, which the stores can import without importing ``core``."""

from leasehold.clock import Clock as Clock
from leasehold.clock import FakeClock as FakeClock
from leasehold.clock import SystemClock as SystemClock
