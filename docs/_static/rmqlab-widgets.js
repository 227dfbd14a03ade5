// A saved lesson widget is shown twice in its output: its picture (the static first state)
// and the live view ipywidgets' manager draws beside it from the saved state.  The picture
// stays until a live view is drawn whole; a view that could not be drawn (a module the site
// does not serve) is taken away and the picture stays.
(function () {
  "use strict";
  function settle(picture) {
    var box = picture.parentElement;
    var live = box.querySelector(":scope > .widget-subarea");
    if (!live || !live.firstElementChild) return false;
    if (/Failed to create view|Could not create a view/.test(live.textContent) || live.querySelector(".widget-error, .jupyter-widgets-error")) {
      live.remove();
      return true;
    }
    picture.style.display = "none";
    return true;
  }
  function watch() {
    document.querySelectorAll(".rmqlab-widget-picture").forEach(function (picture) {
      if (settle(picture)) return;
      var seen = new MutationObserver(function () {
        if (settle(picture)) seen.disconnect();
      });
      seen.observe(picture.parentElement, { childList: true, subtree: true });
    });
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", watch);
  else watch();
})();
