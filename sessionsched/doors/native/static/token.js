// The caller's token: typed into the page's token box (or given as /#token=TOKEN: a fragment
// never reaches the server), kept in this tab's sessionStorage only: gone when the tab closes,
// never in a cookie, sent only as ``Authorization: Bearer`` to this origin.

if (location.hash.startsWith("#token=")) {
  sessionStorage.setItem("token", decodeURIComponent(location.hash.slice(7)));
  history.replaceState(null, "", location.pathname + location.search);
}

export const token = () => sessionStorage.getItem("token");

export function authHeaders() {
  const t = token();
  return t ? {Authorization: "Bearer " + t} : {};
}

// The box shows once the scheduler asked for a token (a 401) or refused one (a 403: another
// token may), and stays for the tab's life (to give another, or forget the one kept).
export function askForToken(why) {
  const form = document.getElementById("token-form");
  if (!form) return;
  sessionStorage.setItem("token-asked", "1");
  form.hidden = false;
  if (why) form.querySelector(".why").textContent = why;
}

function wire() {
  const form = document.getElementById("token-form");
  if (!form) return;
  const forget = document.getElementById("token-forget");
  if (token()) {
    askForToken("Acting with the token given in this tab.");
    forget.hidden = false;
  } else if (sessionStorage.getItem("token-asked")) {
    askForToken("No token given: reading only.");
  }
  form.addEventListener("submit", e => {
    e.preventDefault();
    const value = document.getElementById("token").value.trim();
    if (!value) return;
    sessionStorage.setItem("token", value);
    location.reload();  // every read again, with it
  });
  forget.addEventListener("click", () => {
    sessionStorage.removeItem("token");  // the box stays: "token-asked"
    location.reload();
  });
}

wire();
