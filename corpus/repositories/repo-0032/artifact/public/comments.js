async function loadComments() {
  const response = await fetch("/api/comments");
  const comments = await response.json();
  const list = document.getElementById("comments");
  for (const comment of comments) {
    const item = document.createElement("li");
    item.innerHTML = `<b>${comment.author}</b>: ${comment.body}`;
    list.appendChild(item);
  }
}

document.addEventListener("DOMContentLoaded", loadComments);
