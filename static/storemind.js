// StoreMind pages: citation links highlight their source, the thread scrolls to the newest
// turn, the phone menu and conversation drawer open and close, the typing indicator echoes
// the question as soon as it is sent.
document.addEventListener("click", function (event) {
  const copy = event.target.closest(".copy-answer");
  if (copy) {
    // The answer as it reads (citations included), without the page's buttons.
    const text = copy.closest(".answer").querySelector(".answer-text").innerText.trim();
    const done = () => { copy.dataset.state = "copied"; copy.querySelector(".icon-label").textContent = copy.dataset.copied; };
    if (navigator.clipboard && window.isSecureContext) navigator.clipboard.writeText(text).then(done, () => {});
    else {  // plain http on a shop's LAN: the old way still works there
      const area = Object.assign(document.createElement("textarea"), {value: text});
      document.body.appendChild(area); area.select(); document.execCommand("copy"); area.remove(); done();
    }
    return;
  }
  const toggle = event.target.closest(".menu-toggle, .drawer-toggle, .drawer-close, .drawer-backdrop");
  if (toggle) {
    const cls = toggle.classList.contains("menu-toggle") ? "menu-open" : "drawer-open";
    const open = toggle.classList.contains("drawer-close") || toggle.classList.contains("drawer-backdrop")
      ? false : !document.body.classList.contains(cls);
    document.body.classList.toggle(cls, open);
    if (toggle.hasAttribute("aria-expanded")) toggle.setAttribute("aria-expanded", String(open));
    return;
  }
  if (!event.target.closest(".menu")) document.body.classList.remove("menu-open");
  const link = event.target.closest("a.cite");
  if (!link) return;
  event.preventDefault();
  const target = document.getElementById(link.dataset.target);
  if (!target) return;
  document.querySelectorAll(".highlight").forEach(el => el.classList.remove("highlight"));
  const details = target.closest("details");
  if (details) details.open = true;
  if (target.tagName === "DETAILS") target.open = true;
  target.classList.add("highlight");
  target.scrollIntoView({behavior: "smooth", block: "center"});
});
document.addEventListener("htmx:beforeRequest", function (event) {
  const form = document.getElementById("ask-form");
  if (!form || event.detail.elt !== form) return;
  if (!form.querySelector("textarea").value.trim()) {  // only spaces: nothing to ask (the server said 「问题不能为空」)
    event.preventDefault();
    return;
  }
  if (form.dataset.stream === "1" && !form.querySelector("input[name=async]:checked")) {
    event.preventDefault();  // an LLM writes the answer: shown as it is written (streamAnswer)
    streamAnswer(form);
    return;
  }
  const echo = document.querySelector("#thinking .pending-question");
  form.dataset.sent = form.querySelector("textarea").value;
  if (echo) echo.textContent = form.dataset.sent;
  const hint = document.getElementById("empty-hint");
  if (hint) hint.remove();
  document.getElementById("thinking").scrollIntoView({block: "end"});
});
document.addEventListener("htmx:afterSwap", function (event) {
  const turns = document.getElementById("turns");
  if (turns && event.detail.target && (event.detail.target.id === "turns" || turns.contains(event.detail.target))) {
    // The answer, not the top of its question: a pasted 1,800-character question pushed the
    // answer several screens below the view.
    const last = turns.lastElementChild;
    if (last) (last.querySelector(".answer") || last).scrollIntoView({block: "start"});
  }
  const form = document.getElementById("ask-form");
  if (form && event.detail.requestConfig && event.detail.requestConfig.elt === form) {
    // Only the question that was answered is cleared: what was typed meanwhile stays (a second
    // question sent while waiting is queued by hx-sync and goes out next). The 后台 choice stays too.
    // A question the server refused (too long, empty) stays in the box to be fixed: a pasted
    // 3,000 characters were wiped by 「问题不能超过 2000 个字符」.
    const last = turns && turns.lastElementChild;
    const refused = last && last.querySelector(".error") && !last.querySelector(".answer");
    const box = form.querySelector("textarea");
    if (box.value === form.dataset.sent && !refused) box.value = "";
  }
});
document.addEventListener("htmx:afterRequest", function (event) {
  // A request that went through clears the banner of one that failed before (it stayed for ever).
  const box = document.getElementById("errors");
  if (box && event.detail.successful) box.innerHTML = "";
});
document.addEventListener("htmx:responseError", function (event) {
  const box = document.getElementById("errors");
  if (!box) return;
  // A 4xx the server explained (「只有店长和总部可以查看审计日志。」, 「没有找到，或者它不属于你。」) shows
  // that sentence; htmx does not swap error responses, and "retry later" is wrong for them.
  const xhr = event.detail.xhr;
  const said = xhr.status < 500 && (xhr.getResponseHeader("Content-Type") || "").startsWith("text/html")
    ? new DOMParser().parseFromString(xhr.responseText, "text/html").querySelector(".error") : null;
  box.innerHTML = "";
  if (said && said.textContent.trim()) {
    const line = document.createElement("div");
    line.className = "error";
    line.setAttribute("role", "alert");
    line.textContent = said.textContent.trim();
    box.appendChild(line);
  } else {
    box.innerHTML = '<div class="error">请求失败（' + xhr.status + '），请稍后重试。</div>';
  }
});
document.addEventListener("htmx:sendError", function () {
  const box = document.getElementById("errors");
  if (box) box.innerHTML = '<div class="error">连接不上服务器，请检查网络后重试。</div>';
});

document.addEventListener("DOMContentLoaded", function () {
  // A thread opened from the drawer or after logging in starts at its newest turn (it opened at
  // the first, thousands of pixels above what was said last).
  const turns = document.getElementById("turns");
  const last = turns && turns.lastElementChild;
  if (last && last.classList.contains("turn")) last.scrollIntoView({block: "start"});
});
// Enter sends the question (Shift+Enter is a new line; Enter that ends an IME composition is not
// a send). Here rather than in an onkeydown attribute: the CSP allows no inline script.
document.addEventListener("keydown", function (event) {
  const box = event.target.closest && event.target.closest("textarea[data-enter-sends]");
  if (!box || event.key !== "Enter" || event.shiftKey || event.isComposing) return;
  event.preventDefault();
  box.form.requestSubmit();
});

// With an LLM configured the answer appears as it is written: the same POST with stream=1
// answers one JSON object per line, {"delta": …} while the model writes, then {"html": the
// finished turn}, which replaces the text written so far (its citations checked, as stored).
async function streamAnswer(form) {
  const turns = document.getElementById("turns");
  const box = form.querySelector("textarea");
  const question = box.value;
  const body = new FormData(form);
  body.set("stream", "1");
  const turn = document.createElement("div");
  turn.className = "turn streaming";
  const asked = Object.assign(document.createElement("div"), {className: "question", textContent: question});
  const answer = Object.assign(document.createElement("div"), {className: "answer"});
  const text = Object.assign(document.createElement("div"), {className: "answer-text"});
  answer.appendChild(text);
  turn.append(asked, answer);
  turns.appendChild(turn);
  const hint = document.getElementById("empty-hint");
  if (hint) hint.remove();
  box.value = "";
  form.querySelector("button[type=submit]").disabled = true;
  turn.scrollIntoView({block: "start"});
  try {
    const response = await fetch(form.action, {method: "POST", body, headers: {"X-CSRFToken": body.get("csrfmiddlewaretoken") || ""}});
    if (!response.ok || !response.body) throw new Error(String(response.status));
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    for (;;) {
      const {value, done} = await reader.read();
      buffer += decoder.decode(value || new Uint8Array(), {stream: !done});
      let end;
      while ((end = buffer.indexOf("\n")) >= 0) {
        const line = buffer.slice(0, end).trim();
        buffer = buffer.slice(end + 1);
        if (!line) continue;
        const event = JSON.parse(line);
        if (event.delta) text.textContent += event.delta;
        if (event.html !== undefined) {
          const holder = document.createElement("div");
          holder.innerHTML = event.html;
          const done = holder.querySelector(".turn");
          if (done) {
            turn.replaceWith(done);
            htmx.process(done);
            const threads = holder.querySelector("#conversation-list");  // a new thread joins the sidebar
            const current = document.getElementById("conversation-list");
            if (threads && current) { current.replaceWith(threads); htmx.process(threads); }
          } else {  // an error message: the question goes back into the box to be fixed
            turn.remove();
            box.value = question;
            document.getElementById("errors").innerHTML = event.html;
          }
          if (event.thread_id) {
            document.getElementById("thread-id").value = event.thread_id;
            history.replaceState(null, "", "?thread=" + encodeURIComponent(event.thread_id));
          }
        }
      }
      if (done) break;
    }
  } catch (error) {
    turn.remove();
    box.value = question;
    document.getElementById("errors").innerHTML = '<div class="error" role="alert">网络不稳定，问题没有发出去，请重试。</div>';
  } finally {
    form.querySelector("button[type=submit]").disabled = false;
  }
}
