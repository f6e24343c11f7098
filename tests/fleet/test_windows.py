"""Maintenance windows in a site's own time zone (fleet/windows.py)."""

from __future__ import annotations

from datetime import datetime, time
from zoneinfo import ZoneInfo

import pytest
from django.core.exceptions import ValidationError

from fleet import windows
from fleet.models import MaintenanceWindow, Site
from fleet.windows import BadWindow, Window, is_open, next_opening, parse_days

UTC = ZoneInfo("UTC")
BERLIN = ZoneInfo("Europe/Berlin")
NIGHTS = Window(parse_days("mon-fri"), time(22), time(4))


def test_a_window_past_midnight_belongs_to_the_day_it_opens():
    friday_night = datetime(2026, 11, 27, 23, 30, tzinfo=UTC)  # Sat 00:30 in Berlin
    assert is_open([NIGHTS], BERLIN, friday_night)
    saturday_night = datetime(2026, 11, 28, 23, 30, tzinfo=UTC)  # Sun 00:30: no Sat window
    assert not is_open([NIGHTS], BERLIN, saturday_night)
    assert next_opening([NIGHTS], BERLIN, saturday_night) == datetime(
        2026, 11, 30, 22, 0, tzinfo=BERLIN
    )


def test_the_sites_zone_keeps_its_daylight_saving():
    # 22:00 Berlin is 20:00 UTC in summer and 21:00 UTC in winter.
    assert is_open([NIGHTS], BERLIN, datetime(2026, 7, 6, 20, 30, tzinfo=UTC))
    assert not is_open([NIGHTS], BERLIN, datetime(2026, 12, 7, 20, 30, tzinfo=UTC))


def test_no_window_is_always_open():
    assert is_open([], BERLIN, datetime(2026, 11, 29, 12, 0, tzinfo=UTC))


@pytest.mark.parametrize(
    ("text", "days"),
    [("daily", set(range(7))), ("sat-sun", {5, 6}), ("fri-mon", {4, 5, 6, 0}), ("tue,thu", {1, 3})],
)
def test_weekdays_read_as_operators_write_them(text, days):
    assert parse_days(text) == days


@pytest.mark.parametrize("text", ["funday", "mon-xyz", "", ","])
def test_a_wrong_weekday_is_refused_naming_it(text):
    with pytest.raises(BadWindow):
        parse_days(text)


@pytest.mark.django_db
def test_the_admin_refuses_a_bad_zone_and_a_bad_window():
    site = Site(name="hall-x", time_zone="Mars/Olympus")
    with pytest.raises(ValidationError, match="not an IANA time zone"):
        site.full_clean()
    site.time_zone = "Asia/Tokyo"
    site.full_clean()
    site.save()
    with pytest.raises(ValidationError, match="not a weekday"):
        MaintenanceWindow(site=site, days="someday", start=time(1), end=time(2)).full_clean()
    with pytest.raises(ValidationError, match="a window must have a length"):
        MaintenanceWindow(site=site, days="daily", start=time(1), end=time(1)).full_clean()
    assert windows.zone("Asia/Tokyo").key == "Asia/Tokyo"
