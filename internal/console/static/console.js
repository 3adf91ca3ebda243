// Sluice console: the only script. It refreshes the group page on demand;
// every page works without it.
"use strict";
(function () {
  var box = document.getElementById("autorefresh");
  if (!box) return;
  var key = "sluice-autorefresh";
  var timer = null;
  function arm() {
    if (timer) clearTimeout(timer);
    timer = box.checked ? setTimeout(function () { location.reload(); }, 10000) : null;
  }
  try { box.checked = sessionStorage.getItem(key) === "1"; } catch (e) { /* storage off */ }
  box.addEventListener("change", function () {
    try { sessionStorage.setItem(key, box.checked ? "1" : "0"); } catch (e) { /* storage off */ }
    arm();
  });
  arm();
})();
