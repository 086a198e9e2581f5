// Query links: ?conc=16&router=dynamo&kv=hicache on a deployment page opens that combination: the
// measured tab when router and KV tier are the measured ones, else the derived variant, found in the
// page's own data. A parameter left out keeps the measured router or KV tier, or the first tab; a
// combination the page does not have leaves the page as it is. A #anchor in the URL wins over the query.
// The query becomes the combination's #anchor (without a reload), which the code below follows.
(function () {
  "use strict";

  var query = new URLSearchParams(location.search);

  function resolve() {
    var set = document.querySelector(".tabbed-set[data-router]");
    if (!set || location.hash) return;
    var conc = query.get("conc"), router = query.get("router") || set.dataset.router, kv = query.get("kv") || set.dataset.kv;
    var input = Array.prototype.filter.call(set.querySelectorAll(":scope > input"), function (i) {
      return conc === null || i.dataset.concs.split(" ").indexOf(conc) >= 0;
    })[0];
    if (!input) return;
    var anchor = input.id;
    if (router !== set.dataset.router || kv !== set.dataset.kv) {
      var tab = set.querySelector('label[for="' + input.id + '"]').textContent;
      var data = document.querySelector("script.cb-variants");
      var pick = (data ? JSON.parse(data.textContent).variants : []).filter(function (v) {
        return v.router === router && v.kv === kv && v.point === tab;
      })[0];
      if (!pick) return;
      anchor = pick.anchor;
    }
    history.replaceState(null, "", "#" + anchor);
  }

  if (!["conc", "router", "kv"].some(function (k) { return query.has(k); })) return;
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", resolve); else resolve();
})();

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

// Derived router/KV variants: selectors drawn from the page's own data (script.cb-variants); the
// selected combination's blocks are shown with their copy buttons. `#<variant anchor>` opens one.
(function () {
  "use strict";

  function el(tag, attrs, text) {
    var node = document.createElement(tag);
    Object.keys(attrs).forEach(function (k) { node.setAttribute(k, attrs[k]); });
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function select(label, values, onChange) {
    var box = el("label", {class: "cb-select"}, label + " ");
    var sel = el("select", {});
    values.forEach(function (v) { sel.appendChild(el("option", {value: v}, v)); });
    sel.addEventListener("change", onChange);
    box.appendChild(sel);
    return {box: box, sel: sel};
  }

  function unique(list) { return list.filter(function (v, i) { return list.indexOf(v) === i; }); }

  function draw(data, texts, view) {
    var keys = ["router", "kv", "point"], sels = {};
    var bar = el("div", {class: "cb-selectors"}), out = el("div", {});
    function show() {
      var pick = data.filter(function (v) { return keys.every(function (k) { return v[k] === sels[k].sel.value; }); })[0];
      out.textContent = "";
      if (!pick) { out.appendChild(el("p", {}, "No derived variant for this combination.")); return; }
      pick.blocks.forEach(function (b, i) {
        var text = texts[b.text];
        if (b.where) out.appendChild(el("p", {class: "cb-where"}, b.where));
        var pre = el("pre", {class: "cb-derived-code"}), title = el("span", {class: "filename"}, (i + 1) + ". " + b.title);
        // Material copies what a [data-clipboard-text] button holds, as its own buttons do: also over
        // plain http, where the page has no navigator.clipboard
        var copy = el("button", {class: "cb-copy", type: "button", title: "Copy this command", "data-clipboard-text": text}, "Copy");
        pre.appendChild(el("code", {"data-variant-block": pick.anchor + "-" + i}, text));
        out.appendChild(title); out.appendChild(copy); out.appendChild(pre);
      });
      var link = el("a", {href: "../" + pick.script, download: ""}, "Download " + pick.script);
      out.appendChild(el("p", {}, "")).appendChild(link);
    }
    function follow(first) {
      var linked = data.filter(function (v) { return "#" + v.anchor === location.hash; })[0];
      if (!linked && !first) return;
      keys.forEach(function (k) { sels[k].sel.value = (linked || data[0])[k]; });
      show();
      if (!linked) return;
      view.scrollIntoView();
      // opened afresh, the browser's own jump to the link's target (in the variants table) comes later
      if (document.readyState !== "complete") window.addEventListener("load", function () { view.scrollIntoView(); });
    }
    keys.forEach(function (k) {
      sels[k] = select({router: "Router", kv: "KV tier", point: "Point"}[k], unique(data.map(function (v) { return v[k]; })), show);
      bar.appendChild(sels[k].box);
    });
    view.appendChild(bar); view.appendChild(out);
    follow(true);
    window.addEventListener("hashchange", function () { follow(false); });
  }

  function init() {
    document.querySelectorAll("script.cb-variants").forEach(function (script) {
      var view = document.querySelector(".cb-variant-view");
      var data = JSON.parse(script.textContent);
      if (view && !view.firstChild) draw(data.variants, data.texts, view);
    });
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init); else init();
})();

// Search: a flag as the commands write it (--mem-fraction-static) is searched as its parts, each required
// and each a prefix (+mem* +fraction* +static*), so the flag index comes first. As typed, the search's
// query language read the leading '-' as "must not contain" and '--' as an error: nothing was found.
// The box still shows what was typed; a single '-' keeps its meaning.
(function () {
  "use strict";

  var input = document.querySelector(".md-search__input");
  var value = Object.getOwnPropertyDescriptor(HTMLInputElement.prototype, "value");
  if (!input || !value) return;
  function parts(match, space, flag) {
    return space + flag.split("-").filter(Boolean).map(function (part) { return "+" + part + "*"; }).join(" ");
  }
  Object.defineProperty(input, "value", {
    get: function () { return value.get.call(this).replace(/(^|\s)--+(\S+)/g, parts); },
    set: function (text) { value.set.call(this, text); }
  });
})();

// The flag index opened from a search result (flags.html?h=mem+fraction+static): the flag named by the
// search, or else the first one whose name starts with it, is opened and scrolled into view (every flag
// is folded, and the one searched for is often screens down the page).
(function () {
  "use strict";

  function words(text) { return text.toLowerCase().replace(/[^a-z0-9]+/g, " ").trim(); }

  function open() {
    var query = words(new URLSearchParams(location.search).get("h") || "");
    var flags = Array.prototype.slice.call(document.querySelectorAll("details.cb-flag"));
    if (!query || !flags.length) return;
    var name = function (flag) { return words(flag.querySelector("summary code").textContent); };
    var flag = flags.filter(function (f) { return name(f) === query; })[0] ||
               flags.filter(function (f) { return name(f).indexOf(query) === 0; })[0];
    if (!flag) return;
    flag.open = true;
    flag.scrollIntoView();
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", open); else open();
})();
