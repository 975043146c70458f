// ingestflow web UI: live progress of running jobs, and boxes tied to the element list.
"use strict";

// Running jobs: poll the job record until it finishes, then reload for the final figures.
function watchJobs() {
  document.querySelectorAll("[data-active='1'][data-job]").forEach((row) => {
    const id = row.dataset.job;
    const tick = async () => {
      let answer;
      try {
        answer = await fetch(`/ui/jobs/${encodeURIComponent(id)}/progress`, {credentials: "same-origin"});
      } catch (err) {
        setTimeout(tick, 5000);
        return;
      }
      if (!answer.ok) return;
      const job = await answer.json();
      const status = row.querySelector("[data-field='status']");
      if (status) status.textContent = `${job.status} / ${job.processing_status}`;
      for (const [field, value] of Object.entries(job.files || {})) {
        const cell = row.querySelector(`[data-field='${field}']`);
        if (cell) cell.textContent = String(value);
      }
      const progress = row.querySelector("[data-field='progress']");
      if (progress) progress.textContent = job.progress.join(" · ");
      document.querySelectorAll("#nodes tr.node").forEach((tr) => {
        const node = job.node_stats[Number(tr.dataset.node)];
        if (!node) return;
        tr.querySelectorAll("[data-field]").forEach((cell) => {
          if (node[cell.dataset.field] !== undefined) cell.textContent = String(node[cell.dataset.field]);
        });
      });
      if (job.active) setTimeout(tick, 2000);
      else window.location.reload();
    };
    setTimeout(tick, 1000);
  });
}

// Hovering an element lights its boxes, and a box its element; a click on a box shows it.
function linkBoxes() {
  const light = (index, on) => {
    document.querySelectorAll(`[data-index='${index}']`).forEach((n) => n.classList.toggle("hot", on));
  };
  document.querySelectorAll("svg .box, .element[data-index]").forEach((node) => {
    node.addEventListener("mouseenter", () => light(node.dataset.index, true));
    node.addEventListener("mouseleave", () => light(node.dataset.index, false));
  });
  document.querySelectorAll("svg .box").forEach((box) => {
    box.addEventListener("click", () => {
      const target = document.getElementById(`el-${box.dataset.index}`);
      if (target) target.scrollIntoView({behavior: "smooth", block: "center"});
    });
  });
}

document.addEventListener("DOMContentLoaded", () => {
  watchJobs();
  linkBoxes();
});
