// The review page's stepper: plain JavaScript, no network, no library. Each stepper section
// carries its events as JSON (words set as text, never as markup), its distinct execution
// graphs and records tables as <template>s (cloned when the event needs another), and one
// timeline SVG whose cursor and dimmed future move to the event's x position.
(function () {
  "use strict";

  function replace(box, template) {
    while (box.firstChild) {
      box.removeChild(box.firstChild);
    }
    box.appendChild(template.content.cloneNode(true));
  }

  function setup(root) {
    var data = JSON.parse(root.querySelector("script.ys-data").textContent);
    var events = data.events;
    var last = events.length - 1;
    var graphs = root.querySelectorAll("template.ys-graph-frame");
    var records = root.querySelectorAll("template.ys-records-frame");
    var slider = root.querySelector(".ys-slider");
    var previous = root.querySelector(".ys-previous");
    var next = root.querySelector(".ys-next");
    var position = root.querySelector(".ys-position");
    var where = root.querySelector(".ys-where");
    var words = root.querySelector(".ys-words");
    var line = root.querySelector(".ys-line");
    var graphBox = root.querySelector(".ys-graph");
    var recordsBox = root.querySelector(".ys-records");
    var cursor = root.querySelector(".ys-cursor");
    var future = root.querySelector(".ys-future");
    var shownGraph = -1;
    var shownRecords = -1;

    function show(index) {
      var i = Math.max(0, Math.min(last, index));
      var event = events[i];
      slider.value = String(i);
      position.textContent = "event " + i + " of " + last;
      where.textContent = event.where;
      words.textContent = event.words;
      words.className = "ys-words " + event.tone;
      line.textContent = event.line;
      if (event.graph !== shownGraph) {
        replace(graphBox, graphs[event.graph]);
        shownGraph = event.graph;
      }
      if (event.records !== shownRecords) {
        replace(recordsBox, records[event.records]);
        shownRecords = event.records;
      }
      if (cursor !== null && event.x !== null) {
        cursor.setAttribute("x1", String(event.x));
        cursor.setAttribute("x2", String(event.x));
        future.setAttribute("x", String(event.x + 1));
        future.setAttribute("width", String(Math.max(0, data.right - event.x - 1)));
      }
      previous.disabled = i === 0;
      next.disabled = i === last;
      root.setAttribute("data-event", String(i));
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
    root.addEventListener("keydown", function (key) {
      if (key.target === slider) {
        return; // the slider moves itself on arrow keys
      }
      if (key.key === "ArrowLeft") {
        show(Number(slider.value) - 1);
      } else if (key.key === "ArrowRight") {
        show(Number(slider.value) + 1);
      }
    });
    show(0);
  }

  var steppers = document.querySelectorAll("section.ys-stepper");
  for (var i = 0; i < steppers.length; i += 1) {
    setup(steppers[i]);
  }
})();
