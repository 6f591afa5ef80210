"""The tray / menu-bar icon and what it tells.

- `icon`: the icon and its menu, rebuilt each time it opens;
- `summary`: what the tray says from a cluster view: health, menu lines, notification
  text (no Qt);
- `notify`: desktop notifications (freedesktop D-Bus, macOS, the tray's balloon), with
  `notify_macos`: UNUserNotificationCenter, each notification knowing its link;
- `autostart`: starting at login (XDG autostart entry, LaunchAgent).

May import: `style`, `exotray.core`.
"""
