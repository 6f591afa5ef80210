"""macOS App Nap: keep exotray's timers on time.

App Nap slows an app without a visible window (a menu-bar app, and its agent child that
runs from the same bundle) until its 1 s timers fire every ~10 s. The bundle's
Info.plist asks with NSAppSleepDisabled, but that key is undocumented and reported not
to be honoured, so each process also holds an activity with the documented API
(NSProcessInfo beginActivityWithOptions:reason:, Apple's Energy Efficiency Guide):
user-initiated work is never put in App Nap; idle *system* sleep stays allowed.
Needs pyobjc (pyobjc-framework-Cocoa, installed with the GUI on macOS); without it,
and on other systems, this does nothing.
"""

from __future__ import annotations

import logging
import sys
from typing import Any

log = logging.getLogger(__name__)

#: NSActivityOptions (Foundation/NSProcessInfo.h)
NS_ACTIVITY_USER_INITIATED_ALLOWING_IDLE_SYSTEM_SLEEP = 0x00EF_FFFF
NS_ACTIVITY_LATENCY_CRITICAL = 0xFF_0000_0000
OPTIONS = NS_ACTIVITY_USER_INITIATED_ALLOWING_IDLE_SYSTEM_SLEEP | NS_ACTIVITY_LATENCY_CRITICAL

_held: list[Any] = []  # the activity tokens: the activity lasts while its token lives


def keep_timers_on_time(reason: str, platform: str = sys.platform,
                        process_info: Any = None) -> bool:
    """Hold an activity for this process's lifetime; True if one is held."""
    if platform != "darwin":
        return False
    if process_info is None:
        try:
            from Foundation import NSProcessInfo  # pyobjc
        except ImportError:
            log.info("pyobjc is not installed: macOS may put exotray in App Nap and slow "
                     "its timers (pip install pyobjc-framework-Cocoa)")
            return False
        process_info = NSProcessInfo.processInfo()
    try:
        token = process_info.beginActivityWithOptions_reason_(OPTIONS, reason)
    except Exception as e:  # never let this stop the app
        log.warning("cannot hold an App Nap exemption: %s", e)
        return False
    _held.append(token)
    return True
