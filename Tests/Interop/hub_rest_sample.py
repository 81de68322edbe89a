#!/usr/bin/env python3
"""Drives Herald's hub REST API with `notificationhubs-rest-python` (module
notificationhubs_rest_python, on requests): the hub's REST sample for Python backends,
published on PyPI.

It sends native apple, gcm and windows notifications and a template notification to tags, a
direct send to one device token, a scheduled send and a debug (`&test`) send, and checks that a
scheduled direct send (which Herald does not support) and a wrong key are refused. The client
reports only the HTTP status (it raises on anything but 201 unless in debug mode), so the
caller checks the devices: which tags and handles the script targets is listed below. One
line per check; a non-zero exit at the first failure.

Environment (see hub_common.py for the common ones):
  HERALD_HUB_CONNECTION_STRING, HERALD_HUB_NAME, HERALD_CA_FILE, HERALD_RESULTS_FILE
  HERALD_APNS_DIRECT_TOKEN  an APNs device token of Herald's APNs emulator (no registration needed)
  HERALD_APNS_DEBUG_TOKEN   the token of the one registration tagged `interop-debug`
  HERALD_RUN                optional: a word that makes the messages unique

The hub must have registrations tagged:
  interop-apple      APNs, native            interop-gcm        FCM, native
  interop-windows    WNS, native             interop-template   APNs, template {"aps":{"alert":"$(message)"}}
  interop-scheduled  APNs, native            interop-debug      APNs, native (HERALD_APNS_DEBUG_TOKEN)

The results file maps each of apple, gcm, windows, template, direct, scheduled and debug to
the message text it carried.

Requires: pip install notificationhubs-rest-python
"""

import contextlib
import io
import uuid
from datetime import datetime, timedelta, timezone

from notificationhubs_rest_python.NotificationHub import AzureNotificationHub

from hub_common import (
    CheckFailed,
    child,
    children,
    env,
    expect,
    local_name,
    ok,
    parse_xml,
    run_checks,
    text,
    trust_herald_ca,
    with_wrong_key,
    write_results,
)


def expect_sent(name, answer):
    """The client returns (status, request headers); it has already raised unless 201."""
    status, _ = answer
    expect(name, status == 201, "status %r" % status)


def main():
    trust_herald_ca()
    connection_string = env("HERALD_HUB_CONNECTION_STRING")
    hub_name = env("HERALD_HUB_NAME")
    direct_token = env("HERALD_APNS_DIRECT_TOKEN")
    debug_token = env("HERALD_APNS_DEBUG_TOKEN")
    run = env("HERALD_RUN", uuid.uuid4().hex[:12])
    messages = {name: "%s %s" % (name, run) for name in ("apple", "gcm", "windows", "template", "direct", "scheduled", "debug")}

    # The client keeps its configuration in class attributes: each construction replaces it.
    hub = AzureNotificationHub(connection_string, hub_name)

    expect_sent("send_apple_notification to a tag answers 201",
                hub.send_apple_notification(False, {"aps": {"alert": messages["apple"]}}, tags="interop-apple"))
    expect_sent("send_google_notification (legacy gcm format) answers 201",
                hub.send_google_notification(False, {"data": {"message": messages["gcm"]}}, tags="interop-gcm"))
    toast = '<toast><visual><binding template="ToastText01"><text id="1">%s</text></binding></visual></toast>' % messages["windows"]
    expect_sent("send_windows_notification (toast) answers 201",
                hub.send_windows_notification(False, toast, tags="interop-windows"))
    # A set of tags is sent as an expression that joins them with ||.
    expect_sent("send_template_notification to a set of tags answers 201",
                hub.send_template_notification({"message": messages["template"]}, tags={"interop-template", "interop-nobody"}))
    expect_sent("a direct send to a device token answers 201",
                hub.send_apple_notification(True, {"aps": {"alert": messages["direct"]}}, device_handle=direct_token))
    at = datetime.now(timezone.utc) + timedelta(seconds=2)
    expect_sent("a scheduled send answers 201",
                hub.send_apple_notification(False, {"aps": {"alert": messages["scheduled"]}}, tags="interop-scheduled",
                                            scheduled_time=at))
    # The client also builds scheduled direct sends (/schedulednotifications/?direct). Herald
    # refuses them: ignoring ?direct would make a broadcast of a send meant for one device.
    try:
        hub.send_apple_notification(True, {"aps": {"alert": "never"}}, device_handle=direct_token, scheduled_time=at)
    except Exception as error:  # noqa: BLE001 - the client raises a bare Exception
        expect("a scheduled direct send is refused with 400", "400" in str(error), str(error))
    else:
        raise CheckFailed("a scheduled direct send was accepted")

    # Debug mode appends &test and prints the request and the response instead of raising; the
    # printout holds the SAS token, so it is captured and only the outcome is shown.
    debug = AzureNotificationHub(connection_string, hub_name, debug=1)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        status, _ = debug.send_apple_notification(False, {"aps": {"alert": messages["debug"]}}, tags="interop-debug")
    output = printed.getvalue()
    expect("a debug send requests ?...&test", "&test" in output.split("--- END REQUEST ---")[0], "the request printout names no &test")
    expect("a debug send answers 201", status == 201, "status %r" % status)
    if "Content:\n" not in output:
        raise CheckFailed("the debug printout has no response content")
    content = output.split("Content:\n", 1)[1].split("--- END RESPONSE ---", 1)[0].strip()
    outcome = parse_xml(content, "the debug send's response")
    expect("the debug send's response is a NotificationOutcome", local_name(outcome) == "NotificationOutcome", local_name(outcome))
    expect("the debug send reached one device", (text(outcome, "Success"), text(outcome, "Failure")) == ("1", "0"),
           "Success %r, Failure %r" % (text(outcome, "Success"), text(outcome, "Failure")))
    results = children(child(outcome, "Results"), "RegistrationResult") if child(outcome, "Results") is not None else []
    expect("the debug send names the device and its outcome",
           len(results) == 1 and text(results[0], "ApplicationPlatform") == "apple"
           and (text(results[0], "PnsHandle") or "").lower() == debug_token.lower()
           and text(results[0], "Outcome") == "Success",
           "Results: %r" % [[(local_name(e), e.text) for e in r] for r in results])

    # A wrong key: the client raises with the status (debug off again: a new construction).
    wrong = AzureNotificationHub(with_wrong_key(connection_string), hub_name)
    try:
        wrong.send_apple_notification(False, {"aps": {"alert": "never"}}, tags="interop-apple")
    except Exception as error:  # noqa: BLE001 - the client raises a bare Exception
        expect("a wrong key is refused with 401", "401" in str(error), str(error))
    else:
        raise CheckFailed("a send with a wrong key succeeded")

    write_results(messages)
    ok("all checks of notificationhubs-rest-python passed")


if __name__ == "__main__":
    run_checks(main)
