"use strict";
// The Herald console's only script: it copies, reveals keys on request, asks before
// destructive actions, checks a payload as it is typed, and refreshes live pages.
(function () {
  const csrf = () => { const field = document.querySelector('input[name="csrf"]'); return field ? field.value : ""; };

  // Forms that ask first.
  document.querySelectorAll("form[data-confirm]").forEach((form) => {
    form.addEventListener("submit", (event) => { if (!window.confirm(form.dataset.confirm)) event.preventDefault(); });
  });

  // Copy buttons.
  document.querySelectorAll("button[data-copy]").forEach((button) => {
    button.addEventListener("click", async () => {
      const field = document.getElementById(button.dataset.copy);
      if (!field) return;
      try { await navigator.clipboard.writeText(field.value); }
      catch (_) { field.select(); document.execCommand("copy"); }
      const label = button.textContent; button.textContent = "Copied"; setTimeout(() => { button.textContent = label; }, 1500);
    });
  });

  // Keys and connection strings, fetched only when asked for (a POST with the CSRF token).
  document.querySelectorAll("button[data-reveal]").forEach((button) => {
    button.addEventListener("click", async () => {
      const box = document.getElementById(button.getAttribute("aria-controls"));
      const response = await fetch(button.dataset.reveal, { method: "POST", headers: { "X-CSRF-Token": csrf() }, credentials: "same-origin" });
      if (!response.ok) {
        let reason = "status " + response.status;
        try { reason = (await response.json()).error.message || reason; } catch (_) { /* not JSON */ }
        button.textContent = "Could not show the keys: " + reason;
        return;
      }
      const keys = await response.json();
      box.querySelectorAll("[data-field]").forEach((field) => { field.value = keys[field.dataset.field] || ""; });
      box.hidden = false; button.hidden = true;
    });
  });

  // The test-send form: a template per platform, and checks as the payload is typed.
  const platform = document.querySelector("select[data-templates]");
  const payload = document.getElementById("s-payload");
  const status = document.getElementById("payload-status");
  if (platform && payload && status) {
    const option = () => platform.options[platform.selectedIndex];
    const check = () => {
      const chosen = option(), limit = Number(chosen.dataset.limit), size = new TextEncoder().encode(payload.value).length;
      let problem = null;
      if (chosen.dataset.kind === "json") { try { JSON.parse(payload.value); } catch (error) { problem = "Not valid JSON: " + error.message; } }
      if (!problem && chosen.dataset.kind === "xml" && payload.value.trim() !== "") {
        const parsed = new DOMParser().parseFromString(payload.value, "application/xml");
        if (parsed.getElementsByTagName("parsererror").length) problem = "Not well-formed XML";
      }
      if (!problem && size > limit) problem = size + " bytes: over the " + limit + "-byte limit of this platform";
      status.textContent = problem || (size + " of " + limit + " bytes");
      status.className = "small " + (problem ? "bad" : "good");
    };
    let lastTemplate = option().dataset.template;
    platform.addEventListener("change", () => {
      const template = option().dataset.template;
      if (payload.value.trim() === "" || payload.value === lastTemplate) payload.value = template;
      lastTemplate = template; check();
    });
    if (payload.value.trim() === "") payload.value = lastTemplate;
    payload.addEventListener("input", check);
    check();
    const target = () => document.querySelector('input[name="target"]:checked').value;
    const device = document.getElementById("s-device"), expression = document.getElementById("s-expression");
    const toggle = () => { const one = target() === "device"; device.disabled = !one; expression.disabled = one; };
    document.querySelectorAll('input[name="target"]').forEach((radio) => radio.addEventListener("change", toggle));
    toggle();
  }

  // Live pages refresh themselves.
  const seconds = Number(document.body.dataset.refresh);
  if (seconds > 0) setTimeout(() => window.location.reload(), seconds * 1000);
})();
