// The review page's stepper: plain JavaScript, no network, no library, no eval. Each stepper
// section carries its trace once as JSON: every string once (names), per event its columns and
// the rows of the runtime's records it added, changed or removed. Moving the slider replays
// those changes forwards (or undoes them backwards) to derive the event's state; the tables
// and the execution graph are both drawn from that one state (a node is its execution's row,
// an edge a row of "links"), so they cannot disagree. Every user string is set as text.
(function () {
  "use strict";

  var SVG = "http://www.w3.org/2000/svg";
  var ROW_LIMIT = 25; // rows per table shown without a search (plus the event's own changes)
  var NODE_W = 136;
  var NODE_H = 48;
  var FAMILY_W = 164; // a family's box: its shape on two lines, a bar of statuses, its counts
  var FAMILY_H = 56;
  var BAR_W = 140;
  var COUNTS_FIT = 30; // characters of counts that fit in the box
  var MARGIN = 12;
  var LABEL_AT = 0.62;
  var DASHES = { owned: "", detached: "6 4", joined: "6 3 2 3", trigger: "2 3", continued: "" };
  var CONTINUED = "#0072B2"; // a run to its instance's next run, as graph.CONTINUED_COLOUR
  var DUPLICATE = "#CC0000";

  function svg(name, attrs, parent) {
    var node = document.createElementNS(SVG, name);
    for (var key in attrs) {
      if (Object.prototype.hasOwnProperty.call(attrs, key)) {
        node.setAttribute(key, String(attrs[key]));
      }
    }
    if (parent) {
      parent.appendChild(node);
    }
    return node;
  }

  function html(name, className, text, parent) {
    var node = document.createElement(name);
    if (className) {
      node.className = className;
    }
    if (text !== undefined && text !== null) {
      node.textContent = text;
    }
    if (parent) {
      parent.appendChild(node);
    }
    return node;
  }

  function clear(box) {
    while (box.firstChild) {
      box.removeChild(box.firstChild);
    }
  }

  function hashParameters() {
    var found = {};
    var parts = window.location.hash.replace(/^#/, "").split("&");
    for (var i = 0; i < parts.length; i += 1) {
      var at = parts[i].indexOf("=");
      if (at > 0) {
        try {
          found[parts[i].slice(0, at)] = decodeURIComponent(parts[i].slice(at + 1));
        } catch (error) {
          found[parts[i].slice(0, at)] = parts[i].slice(at + 1);
        }
      }
    }
    return found;
  }

  function setup(root, number) {
    var data = JSON.parse(root.querySelector("script.ys-data").textContent);
    var names = data.names;
    var tables = data.tables;
    var LINKS = tables.length - 1;
    var last = data.words.length - 1;
    var rows = tables.map(function () {
      return new Map();
    });
    var undo = [];
    var cursor = -1;
    var dirtyTables = {};
    var dirtyNodes = new Set();
    var dirtyLinks = new Set();
    var markedBefore = {};
    var query = "";

    var slider = root.querySelector(".ys-slider");
    var previous = root.querySelector(".ys-previous");
    var next = root.querySelector(".ys-next");
    var position = root.querySelector(".ys-position");
    var where = root.querySelector(".ys-where");
    var words = root.querySelector(".ys-words");
    var line = root.querySelector(".ys-line");
    var graphBox = root.querySelector(".ys-graph");
    var recordsBox = root.querySelector(".ys-records");
    var search = root.querySelector(".ys-search");
    var found = root.querySelector(".ys-found");
    var cursorLine = root.querySelector(".ys-cursor");
    var future = root.querySelector(".ys-future");
    var violationNote = root.querySelector(".ys-violation-note");
    // Each violation: [event, [executions it names], sentence] (names' indices).
    var violations = data.violations || [];
    var followed = 0; // the violation a link opened the stepper at, while it stays there
    var namedByViolation = new Set(); // outlined in red, as in the PNG
    violations.forEach(function (violation) {
      violation[1].forEach(function (name) {
        namedByViolation.add(names[name]);
      });
    });

    // ---------------------------------------------------------------- the state

    function touched(table, key) {
      dirtyTables[table] = true;
      if (table === 0) {
        dirtyNodes.add(key);
      } else if (table === LINKS) {
        dirtyLinks.add(key);
      }
    }

    function forward(i) {
      var list = data.changes[i];
      var back = [];
      for (var j = 0; j < list.length; j += 1) {
        var change = list[j];
        var table = change[0];
        var key = names[change[1]];
        var map = rows[table];
        back.push([table, key, map.has(key) ? map.get(key) : null]);
        if (change.length === 2) {
          map.delete(key);
        } else {
          var cells = [];
          for (var c = 3; c < change.length; c += 1) {
            cells.push(names[change[c]]);
          }
          map.set(key, { order: change[2], key: key, cells: cells });
        }
        touched(table, key);
      }
      undo.push(back);
    }

    function backward() {
      var back = undo.pop();
      for (var j = back.length - 1; j >= 0; j -= 1) {
        var table = back[j][0];
        var key = back[j][1];
        if (back[j][2] === null) {
          rows[table].delete(key);
        } else {
          rows[table].set(key, back[j][2]);
        }
        touched(table, key);
      }
    }

    function moveTo(i) {
      while (cursor < i) {
        cursor += 1;
        forward(cursor);
      }
      while (cursor > i) {
        backward();
        cursor -= 1;
      }
    }

    function marksOf(i) {
      // A row the event changed is new if the event before had no such row.
      var marks = {};
      var back = undo[i];
      for (var j = 0; j < back.length; j += 1) {
        var table = back[j][0];
        if (rows[table].has(back[j][1])) {
          marks[table + "\u0000" + back[j][1]] = back[j][2] === null ? "new" : "changed";
        }
      }
      return marks;
    }

    // ---------------------------------------------------------------- the tables

    function matches(row) {
      if (!query) {
        return true;
      }
      for (var c = 0; c < row.cells.length; c += 1) {
        if (row.cells[c].indexOf(query) >= 0) {
          return true;
        }
      }
      return false;
    }

    function renderTable(index, marks, box) {
      var spec = tables[index];
      var all = Array.from(rows[index].values());
      if (spec[0] === "world" && all.length === 0) {
        return; // only for runs whose bodies wrote to the world's key-value store
      }
      all.sort(function (a, b) {
        if (a.order !== b.order) {
          return a.order - b.order;
        }
        return a.key < b.key ? -1 : a.key > b.key ? 1 : 0;
      });
      var shown = [];
      for (var r = 0; r < all.length; r += 1) {
        var marked = marks[index + "\u0000" + all[r].key];
        if (matches(all[r]) && (shown.length < ROW_LIMIT || marked || query)) {
          shown.push(all[r]);
        }
      }
      var div = html("div", "ys-table", null, box);
      var title = html("div", "ys-table-name", spec[0] + " (" + all.length + ")", div);
      if (spec[2]) {
        html("span", "ys-table-note", " \u00b7 " + spec[2], title);
      }
      if (shown.length < all.length) {
        html(
          "div",
          "ys-table-more",
          (query ? "rows naming \u201c" + query + "\u201d: " : "the first ") +
            shown.length +
            " of " +
            all.length +
            (query ? "" : " and this event's changes; find an execution ID to see its rows"),
          div
        );
      }
      var table = html("table", "", null, div);
      var head = html("tr", "", null, html("thead", "", null, table));
      html("th", "", "", head);
      for (var h = 0; h < spec[1].length; h += 1) {
        html("th", "", spec[1][h], head);
      }
      var body = html("tbody", "", null, table);
      if (shown.length === 0) {
        var none = html("td", "none", all.length ? "no row names it" : "none yet", html("tr", "", null, body));
        none.colSpan = spec[1].length + 1;
      }
      for (var s = 0; s < shown.length; s += 1) {
        var mark = marks[index + "\u0000" + shown[s].key] || "";
        var tr = html("tr", mark || "same", null, body);
        tr.setAttribute("data-key", shown[s].key);
        html("td", "mark", mark, tr);
        for (var c = 0; c < shown[s].cells.length; c += 1) {
          html("td", "", shown[s].cells[c], tr);
        }
      }
    }

    function renderTables(marks) {
      clear(recordsBox);
      for (var t = 0; t < LINKS; t += 1) {
        renderTable(t, marks, recordsBox);
      }
    }

    // ---------------------------------------------------------------- the graph

    // Only the executions in (or near) the graph box's scrolled window have elements: a
    // thousand orders' nodes would cost the browser a relayout of thousands at every event.
    // Families of alike executions (data.families) are drawn once, at the layout of the graph
    // with each family one node (data.grouped), as the PNG and the SVG draw them; a family
    // shows how many of its executions are in each status as of the event, and a click on it
    // (or the checkbox) draws every execution (data.nodes).
    var families = data.families || [];
    var familyOf = new Map(); // an execution's family, by its ID
    var familyNamed = new Map(); // a family's index, by its node's name
    families.forEach(function (family, index) {
      familyNamed.set(names[family[0]], index);
      family[3].forEach(function (execution) {
        familyOf.set(names[execution], index);
      });
    });
    var grouped = families.length > 0 && data.grouped.length > 0;
    var groupBox = root.querySelector(".ys-grouped");
    var nodes = new Map();
    var familyNodes = new Map(); // the family nodes drawn now, by family index
    var dirtyFamilies = new Set();
    var byY = [];
    var drawnLinks = new Map();
    var picture = null;
    var edgeLayer = null;
    var nodeLayer = null;
    var windowTop = -1;
    var windowBottom = -1;

    function buildLegend() {
      var legend = html("div", "ys-legend", null, graphBox);
      Object.keys(data.colours).forEach(function (status) {
        var item = html("span", "ys-legend-item", null, legend);
        html("span", "ys-swatch", "", item).style.background = data.colours[status];
        item.appendChild(document.createTextNode(status));
      });
      var leased = html("span", "ys-legend-item", null, legend);
      html("span", "ys-swatch ys-swatch-leased", "", leased);
      leased.appendChild(document.createTextNode("leased (a worker holds it)"));
      if (families.length) {
        var family = html("span", "ys-legend-item", null, legend);
        html("span", "ys-swatch ys-swatch-family", "", family);
        family.appendChild(document.createTextNode(
          "N \u00d7 shape: alike executions drawn once, by status now (click: draw each)"));
      }
    }

    function buildGraph() {
      if (picture !== null) {
        graphBox.removeChild(picture);
      }
      nodes = new Map();
      familyNodes = new Map();
      byY = [];
      drawnLinks = new Map();
      windowTop = -1;
      windowBottom = -1;
      var places = grouped ? data.grouped : data.nodes;
      var width = 0;
      var height = 0;
      for (var i = 0; i < places.length; i += 1) {
        width = Math.max(width, places[i][1]);
        height = Math.max(height, places[i][2]);
      }
      var w = width + FAMILY_W + 2 * MARGIN;
      var h = height + FAMILY_H + 2 * MARGIN;
      picture = svg("svg", { class: "ys-graph-svg", width: w, height: h, viewBox: "0 0 " + w + " " + h });
      graphBox.insertBefore(picture, graphBox.firstChild);
      var defs = svg("defs", {}, picture);
      ["arrow", "arrow-duplicate"].forEach(function (name) {
        var marker = svg("marker", {
          id: "ys-" + name + "-" + number,
          viewBox: "0 0 10 10",
          refX: 10,
          refY: 5,
          markerWidth: 7,
          markerHeight: 7,
          orient: "auto-start-reverse",
        }, defs);
        svg("path", { d: "M 0 0 L 10 5 L 0 10 z", fill: name === "arrow" ? "#333333" : DUPLICATE }, marker);
      });
      edgeLayer = svg("g", { class: "ys-edges" }, picture);
      nodeLayer = svg("g", { class: "ys-nodes" }, picture);
      for (var n = 0; n < places.length; n += 1) {
        var id = names[places[n][0]];
        var family = grouped && familyNamed.has(id) ? familyNamed.get(id) : -1;
        var node = {
          id: id,
          x: places[n][1] + MARGIN + FAMILY_W / 2,
          y: places[n][2] + MARGIN + FAMILY_H / 2,
          family: family,
          el: null,
        };
        nodes.set(id, node);
        if (family >= 0) {
          familyNodes.set(family, node);
        }
        byY.push(node);
      }
      byY.sort(function (a, b) {
        return a.y - b.y;
      });
      if (groupBox !== null) {
        groupBox.checked = grouped;
      }
    }

    function inWindow(node) {
      return node.y >= windowTop && node.y <= windowBottom;
    }

    function drawWindow(force) {
      var reach = Math.max(graphBox.clientHeight, 400);
      var top = graphBox.scrollTop - reach;
      var bottom = graphBox.scrollTop + 2 * reach;
      if (!force && top >= windowTop && bottom <= windowBottom) {
        return;
      }
      windowTop = top - reach;
      windowBottom = bottom + reach;
      byY.forEach(function (node) {
        if (inWindow(node)) {
          if (node.el === null) {
            createNode(node);
          }
        } else if (node.el !== null) {
          nodeLayer.removeChild(node.el.group);
          node.el = null;
        }
      });
      drawnLinks.forEach(function (link, key) {
        if (!inWindow(link.source) && !inWindow(link.target)) {
          edgeLayer.removeChild(link.group);
          drawnLinks.delete(key);
        }
      });
      rows[LINKS].forEach(function (row, key) {
        updateLink(key);
      });
      familyNodes.forEach(function (node, index) {
        updateFamily(index);
      });
    }

    function createNode(node) {
      if (node.family >= 0) {
        createFamily(node);
        return;
      }
      var group = svg("g", { class: "ys-node", transform: "translate(" + node.x + " " + node.y + ")" }, nodeLayer);
      node.el = {
        group: group,
        box: svg("rect", { x: -NODE_W / 2, y: -NODE_H / 2, width: NODE_W, height: NODE_H, rx: 7 }, group),
        name: svg("text", { y: -9, "text-anchor": "middle", class: "ys-node-id" }, group),
        state: svg("text", { y: 5, "text-anchor": "middle", class: "ys-node-state" }, group),
        lease: svg("text", { y: 17, "text-anchor": "middle", class: "ys-node-lease" }, group),
      };
      node.el.name.textContent = node.id;
      svg("title", {}, group).textContent = node.id;
      updateNode(node.id);
    }

    function updateNode(id) {
      var node = nodes.get(id);
      if (!node || node.el === null) {
        return;
      }
      var el = node.el;
      var row = rows[0].get(id);
      if (!row) {
        el.group.style.display = "none";
        el.group.removeAttribute("data-status");
        return;
      }
      // The execution's row in "executions": workflow, origin, parent link, status, lease.
      var status = row.cells[4];
      var lease = row.cells[5];
      el.group.style.display = "";
      el.group.setAttribute("data-status", status);
      el.group.setAttribute("data-id", id);
      el.box.setAttribute("fill", data.colours[status] || "#FFFFFF");
      el.box.setAttribute("rx", row.cells[2] === "trigger" ? 0 : 7);
      el.state.textContent = row.cells[1] + " \u00b7 " + status;
      var leased = lease !== "none";
      el.group.setAttribute("class", "ys-node" + (leased ? " ys-leased" : "") +
        (namedByViolation.has(id) ? " ys-named" : "") + (hit(id) ? " ys-hit" : ""));
      el.lease.textContent = leased ? "lease: " + lease.split(", token")[0] : "";
    }

    // A family's words: its count and first workflow, then the workflows its members started
    // (or, for a family of leaves, its members), as the PNG writes them. Its members are
    // named as ranges that hold none drawn outside it, or its first few (family[7]).
    function familyWords(index) {
      var family = families[index];
      var shape = names[family[1]];
      var chain = shape.slice(0, shape.lastIndexOf(", "));
      var parts = chain.split(" \u2192 ");
      var members = family[2];
      var first = members.length + " \u00d7 " + parts[0];
      var span = names[family[7]];
      var second = parts.length > 1 ? "\u2192 " + parts.slice(1).join(" \u2192 ") : span;
      return [first, second, span];
    }

    function createFamily(node) {
      var words = familyWords(node.family);
      var group = svg("g", {
        class: "ys-node ys-family",
        transform: "translate(" + node.x + " " + node.y + ")",
        "data-family": node.id,
        tabindex: 0,
        role: "button",
      }, nodeLayer);
      // A stack of boxes: the one behind peeks out, as in the PNG.
      svg("rect", { x: -FAMILY_W / 2 + 4, y: -FAMILY_H / 2 + 4, width: FAMILY_W, height: FAMILY_H, rx: 7, class: "ys-family-back" }, group);
      node.el = {
        group: group,
        box: svg("rect", { x: -FAMILY_W / 2, y: -FAMILY_H / 2, width: FAMILY_W, height: FAMILY_H, rx: 7, fill: "#FFFFFF" }, group),
        name: svg("text", { y: -14, "text-anchor": "middle", class: "ys-node-id" }, group),
        state: svg("text", { y: -2, "text-anchor": "middle", class: "ys-node-state" }, group),
        bar: svg("g", { transform: "translate(" + (-BAR_W / 2) + " 4)", class: "ys-bar" }, group),
        counts: svg("text", { y: 22, "text-anchor": "middle", class: "ys-family-counts" }, group),
        title: svg("title", {}, group),
      };
      node.el.name.textContent = words[0];
      node.el.state.textContent = words[1];
      group.addEventListener("click", function () {
        expand(node.family);
      });
      group.addEventListener("keydown", function (key) {
        if (key.key === "Enter" || key.key === " ") {
          key.preventDefault();
          expand(node.family);
        }
      });
      updateFamily(node.family);
    }

    function updateFamily(index) {
      var node = familyNodes.get(index);
      if (!node || node.el === null) {
        return;
      }
      var family = families[index];
      var counts = {};
      var present = 0;
      var leased = 0;
      var found = false;
      for (var e = 0; e < family[3].length; e += 1) {
        var id = names[family[3][e]];
        var row = rows[0].get(id);
        if (row) {
          counts[row.cells[4]] = (counts[row.cells[4]] || 0) + 1;
          present += 1;
          leased += row.cells[5] !== "none" ? 1 : 0;
        }
        found = found || hit(id);
      }
      var el = node.el;
      el.group.style.display = present ? "" : "none";
      var total = family[3].length;
      var statuses = Object.keys(data.colours).filter(function (status) {
        return counts[status];
      });
      Object.keys(counts).forEach(function (status) {
        if (statuses.indexOf(status) < 0) {
          statuses.push(status); // a status with no colour of its own still counts
        }
      });
      clear(el.bar);
      var x = 0;
      var said = [];
      statuses.forEach(function (status) {
        var part = (BAR_W * counts[status]) / total;
        svg("rect", { x: x, width: part, height: 7, fill: data.colours[status] || "#FFFFFF" }, el.bar);
        x += part;
        said.push(counts[status] + " " + status);
      });
      svg("rect", { width: BAR_W, height: 7, class: "ys-bar-frame" }, el.bar);
      if (present < total) {
        said.push((total - present) + " to come");
      }
      // As many counts as fit in the box (the tooltip has them all).
      var shown = said.slice(0, 1);
      for (var s = 1; s < said.length && (shown.concat(said[s]).join(" \u00b7 ").length <= COUNTS_FIT); s += 1) {
        shown.push(said[s]);
      }
      el.counts.textContent = shown.join(" \u00b7 ") + (shown.length < said.length ? " \u2026" : "");
      var words = familyWords(index);
      el.title.textContent = names[family[0]] + "\n" + words[2] + "\n" + total + " executions now: " +
        said.join(", ") + (leased ? ", " + leased + " leased" : "") + "\nclick: draw every execution";
      el.group.setAttribute("data-counts", statuses.map(function (status) {
        return status + ":" + counts[status];
      }).join(","));
      el.group.setAttribute("class", "ys-node ys-family" + (leased ? " ys-leased" : "") + (found ? " ys-hit" : ""));
      updateFamilyLink(index, present > 0);
    }

    function drawLink(key, source, target) {
      var link = drawnLinks.get(key);
      if (!link) {
        var group = svg("g", { class: "ys-edge" }, edgeLayer);
        var bottom = source.y + (source.family >= 0 ? FAMILY_H : NODE_H) / 2;
        var top = target.y - (target.family >= 0 ? FAMILY_H : NODE_H) / 2;
        link = {
          group: group,
          source: source,
          target: target,
          path: svg("line", { x1: source.x, y1: bottom, x2: target.x, y2: top }, group),
          label: svg("text", {
            x: source.x + (target.x - source.x) * LABEL_AT,
            y: bottom + (top - bottom) * LABEL_AT,
            "text-anchor": "middle",
            class: "ys-edge-label",
          }, group),
        };
        drawnLinks.set(key, link);
      }
      return link;
    }

    function removeLink(key) {
      var link = drawnLinks.get(key);
      if (link) {
        edgeLayer.removeChild(link.group);
        drawnLinks.delete(key);
      }
    }

    function styleLink(link, line, duplicate, text) {
      link.group.setAttribute("data-line", line);
      link.path.setAttribute("stroke", duplicate ? DUPLICATE : line === "continued" ? CONTINUED : "#333333");
      link.path.setAttribute("stroke-width", duplicate ? 2.2 : line === "continued" ? 2 : 1.4);
      link.path.setAttribute("stroke-dasharray", DASHES[line] || "");
      link.path.setAttribute("marker-end", "url(#ys-" + (duplicate ? "arrow-duplicate" : "arrow") + "-" + number + ")");
      link.label.textContent = text;
    }

    function updateLink(key) {
      var row = rows[LINKS].get(key);
      if (!row || (grouped && familyOf.has(row.cells[1]))) {
        removeLink(key); // gone, or inside a family (its parent's edge is the family's)
        return;
      }
      var source = nodes.get(row.cells[0]);
      var target = nodes.get(row.cells[1]);
      if (!source || !target || (!inWindow(source) && !inWindow(target))) {
        return;
      }
      var calls = Number(row.cells[5]);
      styleLink(drawLink(key, source, target), row.cells[3], row.cells[4] === "duplicate",
        row.cells[2] + (calls > 1 ? " \u00b7 " + calls + " start calls, one target" : ""));
    }

    function updateFamilyLink(index, present) {
      var family = families[index];
      var key = "family\u0000" + index;
      var source = family[4] >= 0 ? nodes.get(names[family[4]]) : undefined;
      var target = familyNodes.get(index);
      if (!source || !target || !present || !rows[0].has(source.id) ||
          (!inWindow(source) && !inWindow(target))) {
        removeLink(key);
        return;
      }
      styleLink(drawLink(key, source, target), family[6], false, names[family[5]]);
    }

    function renderGraph() {
      if (windowTop === -1 && windowBottom === -1) {
        drawWindow(true);
      }
      dirtyNodes.forEach(function (id) {
        if (grouped && familyOf.has(id)) {
          dirtyFamilies.add(familyOf.get(id));
        } else if (grouped && familyNamed.has(id)) {
          dirtyFamilies.add(familyNamed.get(id));
        } else {
          updateNode(id);
        }
      });
      dirtyLinks.forEach(updateLink);
      dirtyFamilies.forEach(updateFamily);
      dirtyNodes.clear();
      dirtyLinks.clear();
      dirtyFamilies.clear();
    }

    function regroup(value) {
      if (value === grouped || (value && !families.length)) {
        return;
      }
      grouped = value;
      buildGraph();
      renderGraph();
    }

    function expand(index) {
      regroup(false);
      scrollTo(names[families[index][2][0]]);
    }

    // ---------------------------------------------------------------- search and links

    var firstSeen = new Map();
    for (var i = 0; i < data.changes.length; i += 1) {
      for (var j = 0; j < data.changes[i].length; j += 1) {
        var change = data.changes[i][j];
        if (change[0] === 0 && !firstSeen.has(names[change[1]])) {
          firstSeen.set(names[change[1]], i);
        }
      }
    }

    function hit(id) {
      return query !== "" && id.indexOf(query) >= 0;
    }

    function applySearch() {
      query = search.value.trim();
      nodes.forEach(function (node, id) {
        dirtyNodes.add(id);
      });
      for (var t = 0; t < LINKS; t += 1) {
        dirtyTables[t] = true;
      }
      if (!query) {
        found.textContent = "";
        return null;
      }
      var exact = firstSeen.has(query) ? query : null;
      var count = 0;
      firstSeen.forEach(function (seen, id) {
        if (id.indexOf(query) >= 0) {
          count += 1;
          exact = exact || id;
        }
      });
      found.textContent = count === 0
        ? "no execution ID contains \u201c" + query + "\u201d"
        : count + " execution" + (count === 1 ? "" : "s") + "; " + exact + " appears at event #" + firstSeen.get(exact);
      return exact;
    }

    // An execution found by the search box or a link is drawn on its own: its family, if it
    // is in one, is unfolded (every execution drawn).
    function unfold(id) {
      if (id !== null && grouped && familyOf.has(id)) {
        regroup(false);
      }
    }

    function scrollTo(id) {
      var node = nodes.get(id);
      if (node && graphBox.scrollHeight > graphBox.clientHeight + 1) {
        graphBox.scrollTop = Math.max(0, node.y - graphBox.clientHeight / 2);
      }
      if (node && graphBox.scrollWidth > graphBox.clientWidth + 1) {
        graphBox.scrollLeft = Math.max(0, node.x - graphBox.clientWidth / 2);
      }
      drawWindow(false);
    }

    function remember(i) {
      if (number !== 0 || !window.history || !window.history.replaceState) {
        return;
      }
      var hash = "#event=" + i + (query ? "&execution=" + encodeURIComponent(query) : "");
      if (followed && violations[followed - 1][0] === i && !root.hasAttribute("data-violation")) {
        hash = "#violation=" + followed; // still where the link opened it
      }
      try {
        window.history.replaceState(null, "", hash);
      } catch (error) {
        // a page opened where the history cannot change keeps its address
      }
    }

    // ---------------------------------------------------------------- showing an event

    function show(index) {
      var i = Math.max(0, Math.min(last, Number(index) || 0));
      moveTo(i);
      var marks = marksOf(i);
      for (var key in markedBefore) {
        if (Object.prototype.hasOwnProperty.call(markedBefore, key)) {
          dirtyTables[key.split("\u0000")[0]] = true;
        }
      }
      for (var mark in marks) {
        if (Object.prototype.hasOwnProperty.call(marks, mark)) {
          dirtyTables[mark.split("\u0000")[0]] = true;
        }
      }
      markedBefore = marks;
      if (Object.keys(dirtyTables).length) {
        renderTables(marks);
        dirtyTables = {};
      }
      renderGraph();
      slider.value = String(i);
      position.textContent = "event " + i + " of " + last;
      var place = ["event #" + i + " / #" + last, "t=" + data.t[i]];
      if (data.worker[i] >= 0) {
        place.push(names[data.worker[i]]);
      }
      if (data.point[i] >= 0) {
        place.push("choice point #" + data.point[i]);
      }
      where.textContent = place.join(" \u00b7 ");
      words.textContent = data.words[i];
      words.className = "ys-words " + data.tone[i];
      var kind = names[data.kind[i]];
      while (kind.length < 8) {
        kind += " ";
      }
      line.textContent = kind + " " + data.text[i];
      var x = data.x[i];
      if (cursorLine !== null && x !== null) {
        cursorLine.setAttribute("x1", String(x));
        cursorLine.setAttribute("x2", String(x));
        future.setAttribute("x", String(x + 1));
        future.setAttribute("width", String(Math.max(0, data.right - x - 1)));
      }
      previous.disabled = i === 0;
      next.disabled = i === last;
      root.setAttribute("data-event", String(i));
      noteViolations(i);
      remember(i);
    }

    // At the event where a violation came true, its sentence under the event's words.
    function noteViolations(i) {
      if (violationNote === null) {
        return;
      }
      var said = [];
      violations.forEach(function (violation, index) {
        if (violation[0] === i) {
          said.push("violation " + (index + 1) + " comes true here: " + names[violation[2]]);
        }
      });
      violationNote.textContent = said.join("\n");
      if (followed && violations[followed - 1][0] !== i) {
        followed = 0;
      }
    }

    // A link to a violation (#violation=2): the stepper at the event where it came true, the
    // first execution it names found (its family, if it is in one, unfolded) and its sentence
    // marked in the page's list. A report page's stepper answers for the report's violation it
    // replays (data-violation), showing where its own run broke the same invariant.
    function followViolation(asked) {
      var own = root.getAttribute("data-violation");
      var index = Number(asked);
      if (own !== null) {
        if (own !== String(asked)) {
          return;
        }
        index = Number(root.getAttribute("data-opens"));
        root.scrollIntoView({ block: "start" });
      }
      var violation = violations[index - 1];
      if (!violation) {
        return;
      }
      var marked = document.querySelectorAll(".ys-target");
      for (var m = 0; m < marked.length; m += 1) {
        marked[m].classList.remove("ys-target");
      }
      var item = document.getElementById("violation-" + asked);
      if (item !== null) {
        item.classList.add("ys-target");
      }
      followed = own === null ? index : 0;
      var named = violation[1].length ? names[violation[1][0]] : "";
      search.value = named;
      var id = applySearch();
      unfold(id);
      show(violation[0]);
      if (id !== null) {
        scrollTo(id);
      }
    }

    function follow(parameters) {
      var event = parameters.event;
      if (parameters.violation !== undefined) {
        followViolation(parameters.violation);
      } else if (parameters.execution !== undefined) {
        search.value = parameters.execution;
        var id = applySearch();
        unfold(id);
        if (event === undefined && id !== null) {
          event = firstSeen.get(id);
        }
        show(event === undefined ? Number(slider.value) : event);
        if (id !== null) {
          scrollTo(id);
        }
      } else if (event !== undefined) {
        show(event);
      }
    }

    slider.addEventListener("input", function () {
      show(Number(slider.value));
    });
    previous.addEventListener("click", function () {
      show(Number(slider.value) - 1);
    });
    next.addEventListener("click", function () {
      show(Number(slider.value) + 1);
    });
    search.addEventListener("input", function () {
      var id = applySearch();
      unfold(id);
      show(Number(slider.value));
      if (id !== null) {
        scrollTo(id);
      }
    });
    if (groupBox !== null) {
      groupBox.addEventListener("change", function () {
        regroup(groupBox.checked);
      });
    }
    graphBox.addEventListener("scroll", function () {
      drawWindow(false);
    });
    root.addEventListener("keydown", function (key) {
      if (key.target === slider || key.target === search) {
        return; // the slider moves itself on arrow keys; the search box moves its caret
      }
      if (key.key === "ArrowLeft") {
        show(Number(slider.value) - 1);
      } else if (key.key === "ArrowRight") {
        show(Number(slider.value) + 1);
      }
    });
    // The address is read before show() rewrites it. The first stepper follows an event, an
    // execution or a violation; a report's violation steppers, a link to their violation.
    var asked = hashParameters();
    var answers = number === 0 || root.hasAttribute("data-violation");
    buildLegend();
    buildGraph();
    show(0);
    if (answers) {
      var again = function () {
        var now = hashParameters();
        follow(number === 0 ? now : { violation: now.violation });
      };
      follow(number === 0 ? asked : { violation: asked.violation });
      window.addEventListener("hashchange", again);
      // A link to where the address already is changes no hash: follow it all the same.
      var links = document.querySelectorAll("a.ys-violation-link");
      for (var l = 0; l < links.length; l += 1) {
        links[l].addEventListener("click", function (click) {
          if (window.location.hash === click.currentTarget.getAttribute("href")) {
            again();
          }
        });
      }
    }
  }

  var steppers = document.querySelectorAll("section.ys-stepper");
  for (var i = 0; i < steppers.length; i += 1) {
    setup(steppers[i], i);
  }
})();
