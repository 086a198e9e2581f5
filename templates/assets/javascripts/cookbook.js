// Deep links into tabs: open every tab and collapsed section that holds the element the URL hash
// names (a cell, a point, a command block), then scroll to it. Without JavaScript the page still
// works: tabs are CSS radio buttons and every command is in the HTML.
(function () {
  "use strict";

  function openTab(block) {
    var content = block.parentElement;
    var set = content && content.parentElement;
    if (!set || !set.classList.contains("tabbed-set")) return;
    var index = Array.prototype.indexOf.call(content.children, block);
    var inputs = set.querySelectorAll(":scope > input");
    if (inputs[index]) inputs[index].checked = true;
  }

  function reveal() {
    var id = decodeURIComponent(location.hash.slice(1));
    var target = id && document.getElementById(id);
    if (!target) return;
    if (target.tagName === "INPUT") target.checked = true;
    for (var node = target; node; node = node.parentElement) {
      if (node.classList && node.classList.contains("tabbed-block")) openTab(node);
      if (node.tagName === "DETAILS") node.open = true;
    }
    var shown = target.tagName === "INPUT" ? target.parentElement : target;
    shown.scrollIntoView();
  }

  window.addEventListener("hashchange", reveal);
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", reveal);
  } else {
    reveal();
  }
})();
