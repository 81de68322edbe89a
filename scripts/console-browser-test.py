#!/usr/bin/env python3
"""The Herald console in a real browser: Chromium, driven by Selenium through chromedriver.

Starts `herald serve` (its built-in push emulators, SQLite in a temporary directory), which makes
the first operator, `admin`, with a one-time password, and does what a person does in the
console: signs in with that password and chooses a new one, creates a hub, reads its connection string,
registers devices through the hub REST API with it, browses and filters them, watches a device
of `herald device` arrive, test-sends and reads each device's outcome, sends to everyone after
the confirmation, schedules a send and cancels it, looks at the queue, and signs out. Then the
attacks: no session, a forged or missing CSRF token, a request from another origin, an
operator's cookie after sign-out. Every page is saved as a screenshot at 1280×800 and at a
phone's 390×844 (and a few in the dark theme) in --screenshots.

    swift build
    scripts/console-browser-test.py --herald .build/debug/herald

Needs Debian's chromium and chromium-driver, and selenium from PyPI.
"""
import argparse
import http.client
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from heraldprocesses import HubAPI, Node, free_port, wait_for  # noqa: E402

from selenium import webdriver  # noqa: E402
from selenium.webdriver.chrome.service import Service  # noqa: E402
from selenium.common.exceptions import TimeoutException, WebDriverException  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402
from selenium.webdriver.support.ui import Select, WebDriverWait  # noqa: E402

SIZES = {"desktop": (1280, 800), "phone": (390, 844)}
checks = []


def check(condition, what):
    checks.append(what)
    if not condition:
        raise AssertionError(what)
    print(f"  ok  {what}", flush=True)


class Console:
    def __init__(self, base, screenshots):
        self.base = base
        self.screenshots = screenshots
        self.saved = []
        self.device = None
        options = webdriver.ChromeOptions()
        for argument in ["--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                         "--force-device-scale-factor=1", "--hide-scrollbars"]:
            options.add_argument(argument)
        if os.path.exists("/usr/bin/chromium"):
            options.binary_location = "/usr/bin/chromium"
        driver_path = "/usr/bin/chromedriver" if os.path.exists("/usr/bin/chromedriver") else None
        self.driver = webdriver.Chrome(options=options, service=Service(executable_path=driver_path) if driver_path else None)
        self.size("desktop")

    def size(self, name):
        self.size_name = name
        width, height = SIZES[name]
        self.driver.set_window_size(max(width, 500), height + 150)
        # The viewport is what a screenshot shows: exactly the named size.
        self.driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {
            "width": width, "height": height, "deviceScaleFactor": 1, "mobile": name == "phone"})

    def dark(self, on):
        self.driver.execute_cdp_cmd("Emulation.setEmulatedMedia", {
            "features": [{"name": "prefers-color-scheme", "value": "dark" if on else "light"}]})

    def open(self, path):
        self.driver.get(self.base + path)
        return self

    def shot(self, name):
        path = os.path.join(self.screenshots, f"{name}-{self.size_name}.png")
        # The whole page, not only the viewport: set the height to the document's.
        width, height = SIZES[self.size_name]
        full = self.driver.execute_script("return Math.max(document.body.scrollHeight, document.documentElement.scrollHeight)")
        self.driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {
            "width": width, "height": max(height, full), "deviceScaleFactor": 1, "mobile": self.size_name == "phone"})
        self.driver.save_screenshot(path)
        self.driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {
            "width": width, "height": height, "deviceScaleFactor": 1, "mobile": self.size_name == "phone"})
        # Nothing may stick out sideways on a phone.
        overflow = self.driver.execute_script("return document.documentElement.scrollWidth - window.innerWidth")
        check(overflow <= 1, f"{name} fits the {self.size_name}'s width (overflow {overflow}px)")
        self.saved.append(path)

    def text(self):
        return self.driver.find_element(By.TAG_NAME, "body").text

    def field(self, element_id, value):
        element = self.driver.find_element(By.ID, element_id)
        element.clear()
        element.send_keys(value)
        return element

    def click(self, selector):
        self.driver.find_element(By.CSS_SELECTOR, selector).click()

    def wait(self, what, condition, timeout=30):
        def attempt(_):
            try:
                return condition()
            except WebDriverException:
                return False  # the page was being replaced: look again
        try:
            return WebDriverWait(self.driver, timeout, poll_frequency=0.2).until(attempt)
        except TimeoutException:
            raise AssertionError(f"timed out waiting for {what}; the page says:\n{self.text()[:2000]}")

    def cookie(self, name):
        for cookie in self.driver.get_cookies():
            if cookie["name"] == name:
                return cookie
        return None

    def sign_in(self, name, password):
        self.open("/console/sign-in")
        self.field("name", name)
        self.field("password", password).send_keys(Keys.ENTER)


def raw(port, method, path, body=None, headers=None):
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    connection.request(method, path, body=body, headers=headers or {})
    response = connection.getresponse()
    data = response.read()
    return response.status, dict(response.getheaders()), data.decode(errors="replace")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--herald", default=".build/debug/herald")
    parser.add_argument("--screenshots", default=".build/console-screenshots")
    arguments = parser.parse_args()
    herald = os.path.abspath(arguments.herald)
    os.makedirs(arguments.screenshots, exist_ok=True)
    for old in os.listdir(arguments.screenshots):
        if old.endswith(".png"):
            os.remove(os.path.join(arguments.screenshots, old))
    directory = tempfile.mkdtemp(prefix="herald-console-")
    port = free_port()
    node = Node(herald, directory, {}, port, environment={
        "HERALD_HUB_ENDPOINT": f"sb://127.0.0.1:{port}/", "HERALD_BCRYPT_COST": "6",
        # The most the node logs: no password, key or device token may be in it (checked at the end).
        "HERALD_LOG_LEVEL": "trace",
        # The charts read the counters every second, so that they have something to show here.
        "HERALD_CONSOLE_SAMPLE_SECONDS": "1"})
    console = None
    try:
        node.start()
        # The first start made the operator admin; without a terminal its one-time password is
        # in a file of the data directory that the banner names.
        banner = open(node.log.name).read()
        password_file = os.path.join(node.data, "console-admin-password")
        check(password_file in banner, "the banner says where the first operator's one-time password is")
        check(oct(os.stat(password_file).st_mode & 0o777) == "0o600", "the password file is private to the service's user")
        password = open(password_file).read().strip()
        console = Console(f"http://127.0.0.1:{port}", arguments.screenshots)
        run(console, node, port, password, arguments)
    except AssertionError as failure:
        print(f"FAILED: {failure}", flush=True)
        if console:
            console.driver.save_screenshot(os.path.join(arguments.screenshots, "failure.png"))
        print(open(node.log.name).read()[-4000:])
        return 1
    finally:
        if console:
            console.driver.quit()
        if console and console.device and console.device.poll() is None:
            console.device.kill()
        if node.process and node.process.poll() is None:
            node.stop("term")
    print(f"every console check held ({len(checks)} checks); screenshots in {arguments.screenshots}:")
    for name in sorted(os.listdir(arguments.screenshots)):
        print(f"  {name}")
    return 0


def run(console, node, port, one_time, arguments):
    herald = os.path.abspath(arguments.herald)
    new_password = "a long console password"
    # Signing in: the one-time password leads to choosing a new one, and nothing else.
    console.open("/console/hubs")
    check(console.driver.current_url.endswith("/console/sign-in"), "without a session the console asks to sign in")
    console.shot("sign-in")
    console.sign_in("admin", "wrong password")
    check("Wrong operator name or password" in console.text(), "a wrong password is refused")
    console.sign_in("admin", one_time)
    console.wait("the password page", lambda: console.driver.current_url.endswith("/console/password"))
    session = console.cookie("herald_console")
    check(session and session["httpOnly"] and session.get("sameSite") == "Strict", "the session cookie is HttpOnly and SameSite=Strict")
    console.shot("password")
    console.field("current", one_time)
    console.field("new", new_password).send_keys(Keys.ENTER)
    console.wait("the hubs page", lambda: console.driver.current_url.endswith("/console/hubs?done=password"))
    check("Your password is saved" in console.text(), "the new password is saved")

    # Keyboard: the first Tab reaches the skip link.
    console.driver.find_element(By.TAG_NAME, "body").send_keys(Keys.TAB)
    active = console.driver.switch_to.active_element
    check(active.get_attribute("class") == "skip", "the first Tab focuses 'Skip to content'")

    # A hub, and its connection string.
    console.field("hub-name", "shop").send_keys(Keys.ENTER)
    console.wait("the new hub's page", lambda: "/console/hubs/shop" in console.driver.current_url)
    check("The hub is created" in console.text(), "the hub is created")
    console.click('button[data-reveal$="DefaultFullSharedAccessSignature"]')
    connection_string = console.wait("the connection string", lambda: console.driver.find_element(
        By.CSS_SELECTOR, '[data-rule="DefaultFullSharedAccessSignature"] input[data-field="primaryConnectionString"]').get_attribute("value"))
    check(connection_string.startswith(f"Endpoint=sb://127.0.0.1:{port}/;SharedAccessKeyName=DefaultFullSharedAccessSignature"),
          "the connection string is shown on request")
    key = re.search(r"SharedAccessKey=([^;]+)", connection_string).group(1)

    # Devices, through the hub REST API with that connection string.
    api = HubAPI(port, "shop", "DefaultFullSharedAccessSignature", key)
    handles = []
    for n in range(30):
        platform, handle = ("apns", os.urandom(32).hex()) if n < 20 else ("fcmv1", f"fcm-{n}-" + os.urandom(8).hex())
        handles.append(handle)
        tags = ["news"] if n % 2 == 0 else ["sports"]
        if n < 3:
            tags.append("username:carol")
        status, _, data = api.request("PUT", f"/installations/device-{n:02d}", json.dumps(
            {"installationId": f"device-{n:02d}", "platform": platform, "pushChannel": handle, "tags": tags}),
            {"Content-Type": "application/json"})
        check(status == 200, f"installation device-{n:02d} is registered through the hub API") if n in (0, 29) else None
        if status != 200:
            raise AssertionError(f"installation {n}: {status} {data[:200]}")
    console.open("/console/hubs/shop/devices")
    check("30 devices match" in console.text(), "the devices browser counts the 30 devices")
    console.field("f-expr", "news")
    Select(console.driver.find_element(By.ID, "f-platform")).select_by_value("apns")
    console.click(".filters button[type=submit]")
    console.wait("the filtered list", lambda: "10 devices match the filter" in console.text())
    check(True, "filtering by tag expression and platform counts 10")
    console.shot("devices")
    console.field("f-expr", "")
    console.field("f-user", "carol")
    Select(console.driver.find_element(By.ID, "f-platform")).select_by_value("")
    console.click(".filters button[type=submit]")
    console.wait("carol's devices", lambda: "3 devices match the filter" in console.text())
    check(True, "filtering by user counts carol's 3 devices")
    console.driver.find_element(By.CSS_SELECTOR, "table.devices tbody tr a").click()
    console.wait("a device's page", lambda: "Device " in console.driver.title)
    check("username:carol" in console.text(), "a device's page shows its tags")
    console.shot("device")

    # A device of `herald device` arrives in the app backend's hub.
    device_log = open(os.path.join(os.path.dirname(node.data), "device.log"), "w")
    device = console.device = subprocess.Popen([herald, "device", "--server", f"http://127.0.0.1:{port}", "--user", "alice",
                               "--password", "alice's password", "--sign-up", "--count", "1", "--timeout", "120"],
                              stdout=device_log, stderr=subprocess.STDOUT, env=node.env)

    def arrived():
        console.open("/console/hubs/app/devices?user=alice")
        return "1 device match the filter" in console.text()
    console.wait("alice's simulated device", arrived, timeout=60)
    check(True, "the device of `herald device` appears in the app hub's devices")

    # Test send to alice: each device's outcome.
    console.open("/console/hubs/app/send")
    check("bytes" in console.driver.find_element(By.ID, "payload-status").text, "the payload is checked as it is typed")
    payload = console.driver.find_element(By.ID, "s-payload")
    payload.send_keys("{")
    console.wait("the JSON check", lambda: "Not valid JSON" in console.driver.find_element(By.ID, "payload-status").text)
    check(True, "a broken payload is flagged as you type")
    payload.clear()
    payload.send_keys('{"aps":{"alert":{"title":"Hello alice","body":"from the console"}}}')
    console.field("s-expression", "username:alice")
    console.click('button[name=mode][value=test]')
    console.wait("the outcome", lambda: "Outcome of notification" in console.text())
    check("Success" in console.driver.find_element(By.CSS_SELECTOR, "table.results").text, "the test send's outcome for alice's device is Success")
    console.shot("send")
    device.wait(timeout=60)
    device_output = open(device_log.name).read()
    check("Hello alice" in device_output, "`herald device` received the test send")

    # Test send to a tag of the shop hub: made-up tokens get the push service's refusal.
    console.open("/console/hubs/shop/send")
    console.field("s-expression", "news")
    console.click('button[name=mode][value=test]')
    console.wait("the outcome", lambda: "Outcome of notification" in console.text())
    rows = console.driver.find_elements(By.CSS_SELECTOR, "table.results tbody tr")
    check(len(rows) == 10, f"a test send reaches at most 10 devices ({len(rows)} rows)")

    # A send to all: the count first, then the confirmation.
    console.open("/console/hubs/shop/send")
    console.field("s-expression", "sports")
    console.click('button[name=mode][value=full]')
    console.wait("the confirmation", lambda: "Send to every matching device?" in console.text())
    check("10 devices on apns match" in console.text(), "a full send shows the matching count first")
    console.shot("send-confirm")
    console.click(".card.warn button[type=submit]")
    console.wait("the notification's page", lambda: "/notifications/" in console.driver.current_url)
    console.wait("the notification to end", lambda: (console.driver.refresh() or True) and "Completed" in console.text(), timeout=60)
    check("Outcomes per platform" in console.text(), "the notification's page shows its outcomes per platform")
    console.shot("notification")

    # A scheduled send, cancelled.
    console.open("/console/hubs/shop/send")
    console.field("s-expression", "news")
    Select(console.driver.find_element(By.ID, "s-delay")).select_by_value("3600")
    console.click('button[name=mode][value=full]')
    console.wait("the confirmation", lambda: "an hour" in console.text())
    console.click(".card.warn button[type=submit]")
    console.wait("the scheduled notification", lambda: "Scheduled" in console.text())
    console.open("/console/hubs/shop/notifications")
    check(len(console.driver.find_elements(By.CSS_SELECTOR, "table.scheduled tbody tr form")) == 1, "the scheduled send is listed")
    console.shot("notifications")
    console.click("table.scheduled button[type=submit]")
    console.driver.switch_to.alert.accept()
    console.wait("the cancellation", lambda: "cancelled" in console.text())
    check("Nothing is scheduled" in console.text(), "the scheduled send is cancelled")

    console.open("/console/hubs/shop/queue")
    check("Delivery queue of shop" in console.text(), "the queue page answers")
    console.shot("queue")

    # A broadcast channel of the app hub (its APNs is the built-in emulator): created, one
    # broadcast from the form, its send listed with APNs' answer, then deleted.
    console.open("/console/hubs/app/channels")
    check("No channel yet" in console.text(), "the app hub has no broadcast channel yet")
    Select(console.driver.find_element(By.ID, "c-policy")).select_by_value("1")
    console.click('form[action$="/channels"] button[type=submit]')
    console.wait("the channel's page", lambda: "The channel is created at APNs." in console.text())
    check("the most recent message" in console.text(), "the channel keeps the storage policy chosen")
    console.click('form[action$="/broadcast"] button[type=submit]')
    console.wait("the broadcast", lambda: "The broadcast is sent" in console.text())
    check("Success" in console.driver.find_element(By.CSS_SELECTOR, "table.broadcasts").text,
          "the channel's sends list the broadcast with APNs' answer")
    console.shot("channel")
    channel_page = console.driver.current_url.split("?")[0]
    console.open("/console/hubs/app/channels")
    check(len(console.driver.find_elements(By.CSS_SELECTOR, "table.channels tbody a")) == 1, "the channel is listed")
    console.shot("channels")
    console.driver.get(channel_page)
    console.click('form[action$="/delete"] button[type=submit]')
    console.driver.switch_to.alert.accept()
    console.wait("the deletion", lambda: "The channel is deleted at APNs." in console.text())
    check("No channel yet" in console.text(), "the deleted channel is gone")
    console.open("/console/hubs/shop")
    console.shot("hub")
    console.open("/console/hubs")
    check(len(console.driver.find_elements(By.CSS_SELECTOR, "svg.chart polyline")) >= 2,
          "the charts show deliveries per minute and push-service latency")
    console.shot("hubs")

    # Attacks. A request with no session, a forged or missing CSRF token, another origin.
    cookie = f"herald_console={console.cookie('herald_console')['value']}"
    csrf = console.driver.find_element(By.CSS_SELECTOR, 'input[name="csrf"]').get_attribute("value")
    form = {"Content-Type": "application/x-www-form-urlencoded"}
    status, _, _ = raw(port, "POST", "/console/hubs", "name=evil1&csrf=" + csrf, form)
    check(status == 401, f"creating a hub without a session fails ({status})")
    status, _, _ = raw(port, "POST", "/console/hubs", "name=evil2&csrf=forged", dict(form, Cookie=cookie))
    check(status == 403, f"a forged CSRF token fails ({status})")
    status, _, _ = raw(port, "POST", "/console/hubs", "name=evil3", dict(form, Cookie=cookie))
    check(status == 403, f"a missing CSRF token fails ({status})")
    status, _, _ = raw(port, "POST", "/console/hubs", "name=evil4&csrf=" + csrf, dict(form, Cookie=cookie, Origin="https://evil.example"))
    check(status == 403, f"a request from another origin fails ({status})")
    status, _, _ = raw(port, "POST", "/console/hubs/shop/keys/DefaultFullSharedAccessSignature", "", {"Cookie": cookie})
    check(status == 403, f"reading keys without the CSRF token fails ({status})")
    status, _, _ = raw(port, "GET", "/console/hubs", headers={"Authorization": "Basic " + __import__("base64").b64encode(b"alice:alice's password").decode()})
    check(status == 303, f"an app user's credentials grant nothing in the console ({status})")

    # Sign out; the old cookie is worth nothing.
    console.click(".signout button")
    console.wait("the sign-in page", lambda: console.driver.current_url.endswith("/console/sign-in"))
    status, headers, _ = raw(port, "GET", "/console/hubs", headers={"Cookie": cookie})
    check(status == 303 and headers.get("Location") == "/console/sign-in", "the cookie after sign-out leads to sign-in")
    status, _, _ = raw(port, "POST", "/console/hubs", "name=evil5&csrf=" + csrf, dict(form, Cookie=cookie))
    check(status == 401, f"the cookie after sign-out cannot change anything ({status})")
    hubs = node.herald_command("hub", "list")
    check("evil" not in hubs, "no attack created a hub")

    # The same pages on a phone, and a few in the dark theme.
    console.size("phone")
    console.open("/console/sign-in")
    console.shot("sign-in")
    console.sign_in("admin", new_password)
    console.wait("the hubs page", lambda: console.driver.current_url.endswith("/console/hubs"))
    pages = [("hubs", "/console/hubs"), ("hub", "/console/hubs/shop"), ("devices", "/console/hubs/shop/devices?expression=news"),
             ("device", "/console/hubs/shop/devices/%24installation%3Adevice-00"), ("send", "/console/hubs/shop/send"),
             ("notifications", "/console/hubs/shop/notifications"), ("queue", "/console/hubs/shop/queue"),
             ("channels", "/console/hubs/app/channels")]
    for name, path in pages:
        console.open(path)
        console.shot(name)
    console.open("/console/hubs/shop/notifications")
    completed = [row for row in console.driver.find_elements(By.CSS_SELECTOR, "table.history tbody tr") if "Completed" in row.text]
    completed[0].find_element(By.TAG_NAME, "a").click()
    console.wait("a notification's page", lambda: "Notification " in console.driver.title)
    console.shot("notification")
    console.dark(True)
    for name, path in [("hubs", "/console/hubs"), ("hub", "/console/hubs/shop"), ("devices", "/console/hubs/shop/devices")]:
        console.open(path)
        console.shot(name + "-dark")
    console.size("desktop")
    for name, path in [("hubs", "/console/hubs"), ("hub", "/console/hubs/shop"), ("devices", "/console/hubs/shop/devices")]:
        console.open(path)
        console.shot(name + "-dark")
    console.dark(False)
    # A password page and a confirmation at phone size too.
    console.size("phone")
    console.open("/console/password")
    console.shot("password")
    console.open("/console/hubs/shop/send")
    console.field("s-expression", "sports")
    console.click('button[name=mode][value=full]')
    console.wait("the confirmation", lambda: "Send to every matching device?" in console.text())
    console.shot("send-confirm")

    # Nothing secret reached the node's log, at trace level: passwords, the hub's keys, device
    # tokens, the session cookie, the CSRF token.
    log = open(node.log.name).read()
    secrets = {"the one-time password": one_time, "the chosen password": new_password, "the hub's key": key,
               "a device token": handles[0], "the session cookie": cookie.split("=", 1)[1], "the CSRF token": csrf}
    for what, secret in secrets.items():
        check(secret not in log, f"{what} is not in the node's log (trace level, {len(log)} bytes)")


if __name__ == "__main__":
    sys.exit(main())
