// A saved lesson widget is shown twice in its output: its picture (the static first state)
// and the live view ipywidgets' manager draws beside it from the saved state.  The picture
// stays until a live view is drawn; a view with a part that could not be drawn (a module
// the site does not serve: the store map's canvas) is taken away and the picture shown again.
(function () {
  "use strict";
  function outputOf(picture) {
    return picture.closest(".cell_output") || picture.parentElement.parentElement;
  }
  function settle(picture) {
    var live = outputOf(picture).querySelector(".widget-subarea");
    var shown = picture.closest(".output") || picture;
    if (!live || !live.firstElementChild) return;
    if (live.querySelector(".jupyter-widgets-error-widget, .widget-error")) {
      live.remove();
      shown.style.display = "";
    } else {
      shown.style.display = "none";
    }
  }
  function watch() {
    document.querySelectorAll(".rmqlab-widget-picture").forEach(function (picture) {
      settle(picture);
      new MutationObserver(function () { settle(picture); })
        .observe(outputOf(picture), { childList: true, subtree: true });
    });
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", watch);
  else watch();
})();
