#!/usr/bin/env python3
"""Drives Herald's hub REST API with `azure-notification-hub-unofficial` (module
azure_notification_hub, on httpx): an independent Python port of the hub's JavaScript SDK.

It covers installations (PUT, GET right after the PUT, JSON Patch, DELETE), native, template and
test sends, outcome details, scheduled sends and their cancellation, and registrations (list,
get, delete; the client cannot create one, so this script creates it with a plain signed
request). It prints one line per check and exits non-zero at the first failure.

Environment (see hub_common.py for the common ones):
  HERALD_HUB_CONNECTION_STRING, HERALD_HUB_NAME, HERALD_CA_FILE, HERALD_RESULTS_FILE
  HERALD_HUB_LISTEN_CONNECTION_STRING  optional: a Listen-only rule's string (a send is refused)
  HERALD_APNS_TOKEN        an APNs device token that Herald's APNs emulator knows
  HERALD_WEBPUSH_ENDPOINT  a Web Push subscription of Herald's Web Push emulator:
  HERALD_WEBPUSH_P256DH      its endpoint and keys
  HERALD_WEBPUSH_AUTH
  HERALD_RUN               optional: a word that makes ids, tags and messages unique

The results file lists what each device must have received:
  {"webpush": [payload, ...], "apns": [payload, ...], "notifications": {name: id}}

Requires: pip install azure-notification-hub-unofficial
"""

import json
import uuid
from datetime import datetime, timedelta, timezone
from urllib.parse import urlsplit
from xml.dom import minidom

import httpx
from azure_notification_hub import (
    AzureNHError,
    NotificationHubsClient,
    create_apple_body,
    create_apple_notification,
    create_browser_installation,
    create_browser_notification,
    create_sas_token,
    create_template_notification,
    parse_connection_string,
)

from hub_common import (
    CheckFailed,
    child,
    children,
    env,
    expect,
    local_name,
    ok,
    outcome_counts,
    parse_xml,
    poll,
    run_checks,
    text,
    trust_herald_ca,
    with_wrong_key,
    write_results,
)

ATOM = "http://www.w3.org/2005/Atom"
HUB_NAMESPACE = "http://schemas.microsoft.com/netservices/2010/10/servicebus/connect"
XSI = "http://www.w3.org/2001/XMLSchema-instance"
FINAL_STATES = ("Completed", "Abandoned", "NoTargetFound", "Cancelled", "Unknown")


class Responses:
    """Keeps the last response the client's httpx client received.

    The client returns `{}` for a 201 without a body, so the notification id of a send (in its
    `Location` header) is read here: an httpx response hook, installed as test setup; the
    library itself is used unchanged.
    """

    def __init__(self):
        self.last = None

    def hook(self, response):
        self.last = response

    def location_id(self, name, segment):
        response = self.last
        if response is None:
            raise CheckFailed("%s: no response was recorded" % name)
        location = response.headers.get("location")
        if not location:
            raise CheckFailed("%s: the %d answer has no Location header" % (name, response.status_code))
        path = urlsplit(location).path
        if ("/%s/" % segment) not in path:
            raise CheckFailed("%s: Location %s is not under /%s/" % (name, location, segment))
        return path.rstrip("/").rsplit("/", 1)[-1]


def expect_error(name, status, call):
    """Runs `call()`, which must raise AzureNHError with `status` (or one of several)."""
    statuses = status if isinstance(status, tuple) else (status,)
    expected = " or ".join(str(s) for s in statuses)
    try:
        call()
    except AzureNHError as error:
        expect(name, error.status_code in statuses, "expected HTTP %s, got %d: %s" % (expected, error.status_code, error.body[:300]))
        return error
    raise CheckFailed("%s: expected HTTP %s, but the call succeeded" % (name, expected))


def registration_entry(token, tags):
    """An Atom entry holding an AppleRegistrationDescription, as the hub's SDKs post it."""
    document = minidom.Document()
    entry = document.createElement("entry")
    entry.setAttribute("xmlns", ATOM)
    content = document.createElement("content")
    content.setAttribute("type", "application/xml")
    description = document.createElement("AppleRegistrationDescription")
    description.setAttribute("xmlns:i", XSI)
    description.setAttribute("xmlns", HUB_NAMESPACE)
    for name, value in (("Tags", ",".join(tags)), ("DeviceToken", token)):
        element = document.createElement(name)
        element.appendChild(document.createTextNode(value))
        description.appendChild(element)
    content.appendChild(description)
    entry.appendChild(content)
    document.appendChild(entry)
    return document.toxml(encoding="utf-8")


def main():
    trust_herald_ca()
    connection_string = env("HERALD_HUB_CONNECTION_STRING")
    hub_name = env("HERALD_HUB_NAME")
    apns_token = env("HERALD_APNS_TOKEN")
    push_channel = {
        "endpoint": env("HERALD_WEBPUSH_ENDPOINT"),
        "p256dh": env("HERALD_WEBPUSH_P256DH"),
        "auth": env("HERALD_WEBPUSH_AUTH"),
    }
    run = env("HERALD_RUN", uuid.uuid4().hex[:12])
    results = {"webpush": [], "apns": [], "notifications": {}}

    client = NotificationHubsClient(connection_string, hub_name)
    responses = Responses()
    client._client.event_hooks = {"request": [], "response": [responses.hook]}

    def finished(name, notification_id):
        """The NotificationDetails of a send once the hub has finished it."""

        def probe():
            answer = client.get_notification_outcome_details(notification_id)
            return parse_xml(answer.get("_raw_xml", ""), "the notification details of %s" % name)

        details = poll(name, probe, lambda d: text(d, "State") in FINAL_STATES)
        expect("%s: details name the notification" % name, text(details, "NotificationId") == notification_id,
               "NotificationId is %r" % text(details, "NotificationId"))
        return details

    # Installations: a browser one with the client's helper, an APNs one with a template.
    browser_id = "interop-browser-%s" % run
    browser_tag = "browser-%s" % run
    answer = client.create_or_update_installation(
        create_browser_installation(browser_id, push_channel, tags=["interop", browser_tag]))
    expect("create_or_update_installation (browser) answers 200", responses.last.status_code == 200 and answer == {},
           "got %d %r" % (responses.last.status_code, answer))

    read = client.get_installation(browser_id)
    expect("get_installation reads the installation right after the PUT",
           read.get("installationId") == browser_id and read.get("platform", "").lower() == "browser",
           "got %r" % read)
    expect("get_installation returns the push channel", read.get("pushChannel") == push_channel,
           "pushChannel is %r" % read.get("pushChannel"))
    expect("get_installation returns the tags", set(read.get("tags", [])) == {"interop", browser_tag},
           "tags are %r" % read.get("tags"))

    added_tag = "added-%s" % run
    client.update_installation(browser_id, [{"op": "add", "path": "/tags", "value": added_tag}])
    expect("update_installation (JSON Patch add /tags) answers 200", responses.last.status_code == 200,
           "got %d" % responses.last.status_code)
    read = client.get_installation(browser_id)
    expect("the patched installation has the added tag", added_tag in read.get("tags", []),
           "tags are %r" % read.get("tags"))

    apple_id = "interop-apple-%s" % run
    apple_tag = "apple-%s" % run
    client.create_or_update_installation({
        "installationId": apple_id,
        "platform": "apns",
        "pushChannel": apns_token,
        "tags": [apple_tag],
        "templates": {"greeting": {"body": '{"aps":{"alert":"$(message)"}}'}},
    })
    read = client.get_installation(apple_id)
    expect("an APNs installation with a template round-trips",
           read.get("pushChannel", "").lower() == apns_token.lower()
           and read.get("templates", {}).get("greeting", {}).get("body") == '{"aps":{"alert":"$(message)"}}',
           "got %r" % read)

    # Sends to a tag, reported by the outcome details.
    browser_body = json.dumps({"title": "Interop", "body": "browser %s" % run})
    answer = client.send_notification(create_browser_notification(browser_body), tag_expression=added_tag)
    expect("send_notification (browser, to the added tag) answers 201", responses.last.status_code == 201 and answer == {},
           "got %d %r" % (responses.last.status_code, answer))
    browser_send = responses.location_id("browser send", "messages")
    details = finished("browser send", browser_send)
    expect("the browser send completed", text(details, "State") == "Completed", "State is %r" % text(details, "State"))
    counts = outcome_counts(details, "BrowserOutcomeCounts")
    expect("its details count one browser success", counts == {"Success": 1}, "BrowserOutcomeCounts are %r" % counts)
    results["webpush"].append(browser_body)
    results["notifications"]["browser"] = browser_send

    apple_body = create_apple_body(alert="apple %s" % run, badge=1, sound=None)
    client.send_notification(
        create_apple_notification(apple_body, headers={"apns-push-type": "alert", "apns-priority": "10"}),
        tag_expression="$InstallationId:{%s}" % apple_id,
    )
    apple_send = responses.location_id("apple send", "messages")
    details = finished("apple send", apple_send)
    counts = outcome_counts(details, "ApnsOutcomeCounts")
    expect("send_notification (apple, to $InstallationId) reaches the device", counts == {"Success": 1},
           "State %r, ApnsOutcomeCounts %r" % (text(details, "State"), counts))
    results["apns"].append(apple_body)
    results["notifications"]["apple"] = apple_send

    client.send_notification(create_template_notification({"message": "template %s" % run}), tag_expression=apple_tag)
    template_send = responses.location_id("template send", "messages")
    details = finished("template send", template_send)
    counts = outcome_counts(details, "ApnsOutcomeCounts")
    expect("send_notification (template) renders the installation's template", counts == {"Success": 1},
           "State %r, ApnsOutcomeCounts %r" % (text(details, "State"), counts))
    results["apns"].append(json.dumps({"aps": {"alert": "template %s" % run}}))
    results["notifications"]["template"] = template_send

    # A test send answers with the outcome of each device at once.
    test_body = json.dumps({"title": "Interop", "body": "test send %s" % run})
    answer = client.send_notification(create_browser_notification(test_body), tag_expression=browser_tag, test_send=True)
    expect("a test send answers 201 with XML", responses.last.status_code == 201 and "_raw_xml" in answer,
           "got %d %r" % (responses.last.status_code, answer))
    outcome = parse_xml(answer["_raw_xml"], "the test send's outcome")
    expect("the test send's answer is a NotificationOutcome", local_name(outcome) == "NotificationOutcome", local_name(outcome))
    expect("the test send reached one device", (text(outcome, "Success"), text(outcome, "Failure")) == ("1", "0"),
           "Success %r, Failure %r" % (text(outcome, "Success"), text(outcome, "Failure")))
    registration_results = children(child(outcome, "Results"), "RegistrationResult") if child(outcome, "Results") is not None else []
    expect("the test send lists the device's result",
           len(registration_results) == 1
           and text(registration_results[0], "ApplicationPlatform") == "browser"
           and text(registration_results[0], "Outcome") == "Success"
           and text(registration_results[0], "PnsHandle") == push_channel["endpoint"],
           "Results: %r" % [[(local_name(e), e.text) for e in r] for r in registration_results])
    results["webpush"].append(test_body)
    expect_error("get_notification_outcome_details of an unknown id is 404", 404,
                 lambda: client.get_notification_outcome_details("no-such-notification"))

    # Scheduled sends: scheduled, then cancelled.
    at = datetime.now(timezone.utc).replace(microsecond=0) + timedelta(hours=1)
    answer = client.schedule_notification(at, create_browser_notification(browser_body), tag_expression=browser_tag)
    expect("schedule_notification answers 201", responses.last.status_code == 201 and answer == {},
           "got %d %r" % (responses.last.status_code, answer))
    scheduled = responses.location_id("scheduled send", "schedulednotifications")
    details = parse_xml(client.get_notification_outcome_details(scheduled)["_raw_xml"], "the scheduled send's details")
    expect("the scheduled send is Scheduled", text(details, "State") == "Scheduled", "State is %r" % text(details, "State"))
    answer = client.cancel_scheduled_notification(scheduled)
    expect("cancel_scheduled_notification answers 200", responses.last.status_code == 200 and answer == {},
           "got %d %r" % (responses.last.status_code, answer))
    details = parse_xml(client.get_notification_outcome_details(scheduled)["_raw_xml"], "the cancelled send's details")
    expect("the cancelled send is Cancelled", text(details, "State") == "Cancelled", "State is %r" % text(details, "State"))
    # Herald answers 409 (it is no longer scheduled); an unknown id would be 404.
    expect_error("cancelling it again is refused", (404, 409), lambda: client.cancel_scheduled_notification(scheduled))
    expect_error("cancelling an unknown id is 404", 404, lambda: client.cancel_scheduled_notification("no-such-notification"))
    results["notifications"]["scheduled"] = scheduled

    # Registrations: created with a plain signed request, then listed, read and deleted.
    parsed = parse_connection_string(connection_string)
    endpoint = parsed["endpoint"].replace("sb://", "https://")
    registration_tag = "registration-%s" % run
    created = client._client.post(
        "%s/%s/registrations?api-version=2020-06" % (endpoint.rstrip("/"), hub_name),
        content=registration_entry(apns_token.upper(), [registration_tag, "interop"]),
        headers={
            "Authorization": create_sas_token(parsed["shared_access_key_name"], parsed["shared_access_key"], endpoint),
            "Content-Type": "application/atom+xml;type=entry;charset=utf-8",
            "x-ms-version": "2020-06",
        },
    )
    expect("a signed POST /registrations creates a registration", created.status_code in (200, 201),
           "got %d %s" % (created.status_code, created.text[:300]))
    entry = parse_xml(created.text, "the created registration")
    description = child(child(entry, "content"), "AppleRegistrationDescription")
    registration_id = text(description, "RegistrationId") if description is not None else None
    expect("the created registration has an id", bool(registration_id), created.text[:300])

    listed = client.list_registrations()
    expect("list_registrations lists it",
           any(item.get("RegistrationId") == registration_id and item.get("title") == registration_id for item in listed),
           "listed: %r" % [(item.get("title"), item.get("RegistrationId")) for item in listed])
    read = client.get_registration(registration_id)
    expect("get_registration reads it",
           read.get("RegistrationId") == registration_id
           and (read.get("DeviceToken") or "").lower() == apns_token.lower()
           and sorted(read.get("Tags") or []) == sorted([registration_tag, "interop"])
           and read.get("etag") == 'W/"1"',
           "got %r" % read)
    answer = client.delete_registration(registration_id)
    expect("delete_registration answers 200", responses.last.status_code == 200 and answer == {},
           "got %d %r" % (responses.last.status_code, answer))
    expect_error("get_registration after the delete is 404", 404, lambda: client.get_registration(registration_id))

    # Installations deleted.
    for installation_id in (browser_id, apple_id):
        answer = client.delete_installation(installation_id)
        expect("delete_installation %s answers 204" % installation_id, responses.last.status_code == 204 and answer == {},
               "got %d %r" % (responses.last.status_code, answer))
        expect_error("get_installation %s after the delete is 404" % installation_id, 404,
                     lambda: client.get_installation(installation_id))

    # Keys: a wrong key is refused; a Listen key cannot send.
    wrong = NotificationHubsClient(with_wrong_key(connection_string), hub_name)
    expect_error("a wrong key is 401", 401, lambda: wrong.get_installation(browser_id))
    wrong.close()
    listen_string = env("HERALD_HUB_LISTEN_CONNECTION_STRING", "-")
    if listen_string != "-":
        listener = NotificationHubsClient(listen_string, hub_name)
        expect_error("a Listen key cannot send (403)", 403,
                     lambda: listener.send_notification(create_browser_notification(browser_body), tag_expression=browser_tag))
        listener.close()

    client.close()
    write_results(results)
    ok("all checks of azure-notification-hub-unofficial (httpx %s) passed" % httpx.__version__)


if __name__ == "__main__":
    run_checks(main)
