/* Pagewatch dashboard behaviour. Small on purpose: htmx does the requests;
   this file adds what htmx cannot declare without inline handlers (which the
   Content-Security-Policy forbids). Every page works without it. */
(function () {
  "use strict";

  function announce(message) {
    var region = document.getElementById("announcer");
    if (!region || !message) return;
    region.textContent = "";
    window.setTimeout(function () { region.textContent = message; }, 50);
  }

  /* ---- Inline validation: only show errors for fields people have touched */
  var touched = new WeakMap();

  function touchedFor(form) {
    if (!touched.has(form)) touched.set(form, new Set());
    return touched.get(form);
  }

  function noteTouched(event) {
    var field = event.target;
    if (!event.isTrusted || !field.form || !field.name) return;
    if (!field.form.matches("[data-validate-form]")) return;
    touchedFor(field.form).add(field.name);
  }
  document.addEventListener("input", noteTouched);
  document.addEventListener("change", noteTouched);

  document.addEventListener("htmx:configRequest", function (event) {
    var elt = event.detail.elt;
    if (elt && elt.matches && elt.matches("[data-validate-form]")) {
      event.detail.parameters["_touched"] = Array.from(touchedFor(elt)).join(",");
    }
  });

  /* aria-invalid follows the error text next to each control. A slot that
     describes several controls (the schedule and its time zone) names the
     ones its messages are about in data-controls. */
  function syncInvalid() {
    document.querySelectorAll(".field-error[id^='err-']").forEach(function (slot) {
      var invalid = slot.textContent.trim() !== "";
      var named = slot.getAttribute("data-controls");
      var faults = named === null ? null : named.split(" ");
      var selector = "[aria-describedby~='" + CSS.escape(slot.id) + "']";
      document.querySelectorAll(selector).forEach(function (control) {
        if (!/^(INPUT|TEXTAREA|SELECT)$/.test(control.tagName)) return;
        var mine = invalid && (faults === null || faults.indexOf(control.id) !== -1);
        if (mine) control.setAttribute("aria-invalid", "true");
        else control.removeAttribute("aria-invalid");
      });
    });
  }
  document.addEventListener("htmx:afterRequest", syncInvalid);

  /* An error that inline validation brings in (or changes) is read out
     once, as it is seen: its slot is swapped in whole, which a screen reader
     does not read, and the field being typed in does not read its
     description again. One that stays the same is not repeated. */
  var errorsBefore = null;

  function errorTexts() {
    var texts = {};
    document.querySelectorAll(".field-error[id^='err-']").forEach(function (slot) {
      texts[slot.id] = slot.textContent.replace(/\s+/g, " ").trim();
    });
    return texts;
  }

  document.addEventListener("htmx:beforeSwap", function (event) {
    var elt = event.detail.elt;
    if (elt && elt.matches && elt.matches("[data-validate-form]")) errorsBefore = errorTexts();
  });

  document.addEventListener("htmx:afterRequest", function () {
    if (errorsBefore === null) return;
    var before = errorsBefore;
    errorsBefore = null;
    var after = errorTexts();
    var fresh = Object.keys(after).filter(function (id) {
      return after[id] && after[id] !== before[id];
    }).map(function (id) { return after[id]; });
    if (fresh.length) announce(fresh.join(" "));
  });

  /* A target row removed while its validation answer was on the way has no
     error slots any more: drop them from the answer rather than let htmx
     report each as a missing out-of-band target. */
  document.addEventListener("htmx:beforeSwap", function (event) {
    var elt = event.detail.elt;
    if (!elt || !elt.matches || !elt.matches("[data-validate-form]")) return;
    var answer = document.createElement("template");  // inert: nothing runs
    answer.innerHTML = event.detail.serverResponse;
    answer.content.querySelectorAll("[hx-swap-oob][id]").forEach(function (slot) {
      if (!document.getElementById(slot.id)) slot.remove();
    });
    event.detail.serverResponse = answer.innerHTML;
  });

  /* ---- Target rows: remove without a round trip; focus a newly added row */
  document.addEventListener("click", function (event) {
    var button = event.target.closest("[data-remove-target]");
    if (!button) return;
    var row = button.closest("[data-target-row]");
    var form = button.form;
    if (!row || !form) return;
    event.preventDefault();
    var kind = row.querySelector(".target-kind");
    row.remove();
    announce((kind ? kind.textContent : "Target") + " target removed.");
    var add = form.querySelector(".add-targets button");
    if (add) add.focus();
    touchedFor(form).add("targets");
    if (window.htmx) window.htmx.trigger(form, "change");
  });

  /* The new row takes the keyboard only if the keyboard is still where the
     person asked for it (an "Add" button, or nowhere: some browsers do not
     focus a clicked button). The row arrives a round trip after the click:
     someone who has meanwhile moved on, say to type the schedule, would
     otherwise have the rest of their typing land in the row's address box,
     and the schedule's preview and validation would never hear it. */
  function focusStillOnAdd(form) {
    var active = document.activeElement;
    if (!active || active === document.body) return true;
    var add = form && form.querySelector(".add-targets");
    return !!add && add.contains(active);
  }

  document.addEventListener("htmx:afterSettle", function (event) {
    var target = event.detail.target;
    if (!target || target.id !== "targets") return;
    var rows = target.querySelectorAll("[data-target-row]");
    var row = rows[rows.length - 1];
    if (!row) return;
    var form = target.closest("form");
    var first = row.querySelector("textarea, input:not([type=hidden]), select");
    if (first && focusStillOnAdd(form)) first.focus();
    var kind = row.querySelector(".target-kind");
    announce((kind ? kind.textContent : "Target") + " target added.");
    // Validated again, so "add at least one thing to watch" goes once there is one.
    if (form && window.htmx) window.htmx.trigger(form, "change");
  });

  /* ---- A field that matters only for some choices of another (the digest
     time, only for digests). The server always sends it, so the form works
     without JavaScript; here it is hidden while the choice makes it moot. */
  function syncShownWhen() {
    document.querySelectorAll("[data-shown-when]").forEach(function (field) {
      var control = document.getElementById(field.getAttribute("data-shown-when"));
      if (!control) return;
      var values = (field.getAttribute("data-shown-values") || "").split(" ");
      field.hidden = values.indexOf(control.value) === -1;
    });
  }
  document.addEventListener("change", function (event) {
    var id = event.target.id;
    if (id && document.querySelector("[data-shown-when='" + CSS.escape(id) + "']")) {
      syncShownWhen();
    }
  });

  /* ---- The monitor list's "select all shown" ticks (and follows) every row */
  document.addEventListener("change", function (event) {
    var target = event.target;
    var all = document.querySelector("[data-select-all]");
    if (!all) return;
    var rows = document.querySelectorAll("[data-select-row]");
    if (target.matches("[data-select-all]")) {
      rows.forEach(function (row) { row.checked = target.checked; });
    } else if (target.matches("[data-select-row]")) {
      all.checked = Array.prototype.every.call(rows, function (row) { return row.checked; });
    }
  });

  /* ---- New monitors of a team that keeps UTC start in the browser's time zone */
  function useBrowserZone() {
    var input = document.querySelector("input[data-browser-timezone]");
    if (!input || input.value !== "UTC") return;
    var zone = "";
    try { zone = Intl.DateTimeFormat().resolvedOptions().timeZone || ""; } catch (e) { zone = ""; }
    if (!zone || zone === "UTC") return;
    input.value = zone;
    if (window.htmx) window.htmx.trigger(input, "change");
  }

  /* ---- Copy a new API key */
  document.addEventListener("click", function (event) {
    var button = event.target.closest("[data-copy]");
    if (!button) return;
    var source = document.querySelector(button.getAttribute("data-copy"));
    if (!source) return;
    function done() {
      button.textContent = "Copied";
      announce("Copied to the clipboard.");
    }
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(source.value).then(done, function () {
        source.select();
      });
    } else {
      source.select();
      try { if (document.execCommand("copy")) done(); } catch (e) { /* selected for manual copy */ }
    }
  });

  /* ---- Diff: previous / next change */
  var currentChange = 0;

  function changeRows() {
    // Rows of the diff tables; paragraphs, items, headings and table rows of
    // the page text (checks.content.marked.number_changes).
    return Array.from(document.querySelectorAll("#diff-region [id^='change-']"));
  }

  function showChange(number) {
    var rows = changeRows();
    if (!rows.length) return;
    currentChange = ((number - 1 + rows.length) % rows.length) + 1;
    rows.forEach(function (row) { row.classList.remove("is-current"); });
    var row = rows[currentChange - 1];
    row.classList.add("is-current");
    row.setAttribute("tabindex", "-1");
    row.focus({ preventScroll: true });
    row.scrollIntoView({ block: "center" });
    history.replaceState(history.state, "", "#" + row.id);
    var position = document.querySelector("[data-change-position]");
    if (position) position.textContent = "Change " + currentChange + " of " + rows.length;
  }

  document.addEventListener("click", function (event) {
    var link = event.target.closest("[data-change-step]");
    if (!link) return;
    event.preventDefault();
    var step = parseInt(link.getAttribute("data-change-step"), 10);
    if (currentChange === 0) showChange(step > 0 ? 1 : changeRows().length);
    else showChange(currentChange + step);
  });

  document.addEventListener("htmx:afterSettle", function (event) {
    if (event.detail.target && event.detail.target.id === "diff-region") {
      currentChange = 0;
      var position = document.querySelector("[data-change-position]");
      var count = changeRows().length;
      if (position) position.textContent = count + " change" + (count === 1 ? "" : "s");
    }
  });

  /* Layout toggle: keep aria-current on the chosen layout after an htmx swap. */
  document.addEventListener("htmx:afterSwap", function (event) {
    // After an outerHTML swap the event's target is the old, detached region.
    if (!event.detail.target || event.detail.target.id !== "diff-region") return;
    var region = document.getElementById("diff-region");
    if (!region) return;
    var layout = region.getAttribute("data-layout");
    document.querySelectorAll(".segmented a[data-layout]").forEach(function (a) {
      if (a.getAttribute("data-layout") === layout) a.setAttribute("aria-current", "true");
      else a.removeAttribute("aria-current");
    });
  });

  /* ---- A running check (the Run section of a monitor or check page). Its
     status is polled every second: an answer that shows nothing new is not
     swapped in, so nothing is redrawn or read out again; each new stage
     ([data-stage]: waiting, checking, finished) is read out once through the
     page's live region. When the swap takes away what had the keyboard's
     focus (Run now), focus stays in the section instead of falling to the
     top of the page. */
  var shownStage = "";
  var focusWasInRun = false;

  function stageWords(status) {
    var stage = status && status.querySelector("[data-stage]");
    if (!stage) return "";
    var parts = Array.from(stage.children).map(function (part) {
      return part.textContent.trim();
    }).filter(Boolean);
    return (parts.length ? parts.join(", ") : stage.textContent).replace(/\s+/g, " ").trim();
  }

  document.addEventListener("htmx:beforeSwap", function (event) {
    var target = event.detail.target;
    if (!target || target.id !== "run-status" || !event.detail.shouldSwap) return;
    var answer = document.createElement("template");  // inert: nothing runs
    answer.innerHTML = event.detail.serverResponse;
    var next = answer.content.getElementById("run-status");
    if (next && next.innerHTML === target.innerHTML) {
      event.detail.shouldSwap = false;
      return;
    }
    focusWasInRun = target.contains(document.activeElement);
  });

  // Focus is put back as the new status goes in (afterSwap runs in the same
  // task as the swap), not after htmx's settle delay: for those milliseconds
  // the keyboard would be at the top of the page.
  document.addEventListener("htmx:afterSwap", function () {
    var status = document.getElementById("run-status");
    if (!status) return;
    if (focusWasInRun && (!document.activeElement || document.activeElement === document.body)) {
      var section = status.closest("section");
      if (section) section.focus({ preventScroll: true });
    }
    focusWasInRun = false;
  });

  document.addEventListener("htmx:afterSettle", function () {
    var status = document.getElementById("run-status");
    if (!status) return;
    var words = stageWords(status);
    if (words && words !== shownStage) announce(words);
    shownStage = words;
  });

  /* ---- A region redrawn around the keyboard (a check's history, its chart
     or its pages, when a check starts or ends): focus goes to the same link
     or button in the new copy, or to the region when it is gone, instead of
     falling to the top of the page. The run status keeps its own (above). */
  var focusBefore = {};

  document.addEventListener("htmx:beforeSwap", function (event) {
    var target = event.detail.target;
    var active = document.activeElement;
    if (!target || !target.id || target.id === "run-status") return;
    delete focusBefore[target.id];
    if (!active || active === document.body || !target.contains(active)) return;
    focusBefore[target.id] = {
      tag: active.tagName,
      id: active.id,
      href: active.getAttribute("href"),
      words: active.textContent.trim(),
    };
  });

  document.addEventListener("htmx:afterSwap", function (event) {
    var id = event.detail.target && event.detail.target.id;
    var was = id && focusBefore[id];
    if (!was) return;
    delete focusBefore[id];
    if (document.activeElement && document.activeElement !== document.body) return;
    var region = document.getElementById(id);
    if (!region) return;
    var same = Array.from(region.getElementsByTagName(was.tag)).find(function (el) {
      if (was.id) return el.id === was.id;
      return el.getAttribute("href") === was.href && el.textContent.trim() === was.words;
    });
    if (!same) {
      region.setAttribute("tabindex", "-1");
      same = region;
    }
    same.focus({ preventScroll: true });
  });

  /* ---- An outcome that a polled region brings in ([data-announce]: an
     import finished). A status region put into the page whole is
     not read out reliably, so its words go through the page's own one,
     once; those already on the page when it opened are not read again. */
  function markAnnounced() {
    document.querySelectorAll("[data-announce]").forEach(function (outcome) {
      outcome.setAttribute("data-announced", "");
    });
  }

  document.addEventListener("htmx:afterSettle", function () {
    document.querySelectorAll("[data-announce]:not([data-announced])").forEach(function (outcome) {
      outcome.setAttribute("data-announced", "");
      announce(outcome.textContent.replace(/\s+/g, " ").trim());
    });
  });

  /* ---- Server messages and problems */
  document.addEventListener("announce", function (event) {
    announce(event.detail && event.detail.message);
  });

  document.addEventListener("htmx:beforeSwap", function (event) {
    // A session that ended turns every htmx request into the sign-in page:
    // go there instead of pasting it into a fragment.
    var xhr = event.detail.xhr;
    if (xhr && xhr.responseURL && xhr.responseURL.indexOf("/accounts/login/") !== -1) {
      event.detail.shouldSwap = false;
      window.location.assign(xhr.responseURL);
    }
  });

  // htmx swaps nothing on an error answer: without this a pressed button
  // would seem to do nothing. Shown where the page's own messages go, and an
  // alert, so it is read out too.
  function showProblem(message) {
    var main = document.getElementById("main");
    if (!main) return;
    var box = document.getElementById("request-problem");
    if (!box) {
      box = document.createElement("div");
      box.id = "request-problem";
      box.className = "messages";
      box.setAttribute("role", "alert");
      main.insertBefore(box, main.firstChild);
    }
    var line = document.createElement("p");
    line.className = "message error";
    line.textContent = message;
    box.replaceChildren(line);
    box.scrollIntoView({ block: "nearest" });
  }

  document.addEventListener("htmx:responseError", function (event) {
    var xhr = event.detail.xhr;
    var status = xhr ? xhr.status : 0;
    // A form's token refused (signed in again in another tab, say): the
    // server marks that answer, and it is the page that is old, not the role.
    if (status === 403 && xhr.getResponseHeader("Pagewatch-Refused") === "stale-form") {
      showProblem("This page is out of date (you may have signed in again in another tab). Reload the page and try again. Nothing was changed.");
    } else if (status === 404) {
      showProblem("This is no longer here: someone may have deleted it. Reload the page to see what there is now.");
    } else if (status === 403) {
      showProblem("You may not do this (your role in the team may have changed). Reload the page to see what you can do.");
    } else if (status >= 500) {
      showProblem("Something went wrong on our side. Please try again.");
    } else {
      showProblem("That did not work. Reload the page and try again.");
    }
  });
  document.addEventListener("htmx:sendError", function () {
    showProblem("The server could not be reached. Check your connection and try again.");
  });

  /* ---- A submitted form with problems: open the folded sections that hold
     them, and move focus to the summary so it is read out first. A form
     without a summary (an invitation, a key's name, a password) sent back
     with a refused field: focus that field, so the keyboard is where the
     problem is and its error is read out with its label, rather than at the
     top of a page whose form may be far below. */
  function showProblems() {
    document.querySelectorAll("details:not([open])").forEach(function (section) {
      if (section.querySelector('[aria-invalid="true"]')) section.open = true;
    });
    var summary = document.getElementById("error-summary");
    if (summary) {
      summary.focus();
      return;
    }
    var refused = document.querySelector('#main [aria-invalid="true"]');
    if (refused) {
      refused.focus();
      return;
    }
    /* What a form just did, said where its form is ([data-focus-on-load]:
       the monitor list's bulk actions): focus goes there, so it is read out
       and the keyboard goes on from the form it used, not from the top. */
    var outcome = document.querySelector("[data-focus-on-load]");
    if (outcome) outcome.focus();
  }

  /* ---- Screenshots: lay this check's over the earlier one and let a slider
     move the line between them (without script both are shown in full) */
  function startCompare(compare) {
    var control = compare.querySelector("[data-compare-control]");
    var slider = compare.querySelector("[data-compare-slider]");
    var stage = compare.querySelector("[data-compare-stage]");
    if (!control || !slider || !stage) return;
    function show() {
      var value = parseInt(slider.value, 10);
      stage.style.setProperty("--reveal", value + "%");
      slider.setAttribute("aria-valuetext", value === 0 ? "Only this check's screenshot"
        : value === 100 ? "Only the earlier screenshot"
        : "Earlier screenshot on the left " + value + " %, this check's on the rest");
    }
    slider.addEventListener("input", show);
    var zoom = compare.querySelector("[data-compare-zoom]");
    if (zoom) {
      stage.style.setProperty("--actual-width", stage.dataset.width + "px");
      var view = compare.querySelector("[data-compare-view]");
      zoom.addEventListener("click", function () {
        var zoomed = compare.classList.toggle("is-zoomed");
        zoom.setAttribute("aria-pressed", zoomed ? "true" : "false");
        // A window that scrolls must be reachable from the keyboard.
        if (zoomed) view.setAttribute("tabindex", "0");
        else view.removeAttribute("tabindex");
      });
    }
    control.hidden = false;
    compare.classList.add("is-sliding");
    show();
  }

  function start() {
    document.querySelectorAll("[data-compare]").forEach(startCompare);
    document.querySelectorAll("[data-copy]").forEach(function (b) { b.hidden = false; });
    showProblems();
    markAnnounced();
    useBrowserZone();
    syncShownWhen();
    shownStage = stageWords(document.getElementById("run-status"));
    var match = /^#change-(\d+)$/.exec(window.location.hash);
    if (match && changeRows().length) showChange(parseInt(match[1], 10));
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
