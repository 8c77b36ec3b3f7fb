// Options: the service URL and the API key, kept in this browser only (storage.local).
"use strict";

const DEFAULTS = { backendUrl: "http://127.0.0.1:8080", apiKey: "" };
const $ = (id) => document.getElementById(id);

async function load() {
  const stored = await chrome.storage.local.get(DEFAULTS);
  $("backendUrl").value = stored.backendUrl;
  $("apiKey").value = stored.apiKey;
}

async function save() {
  const backendUrl = $("backendUrl").value.trim().replace(/\/+$/, "") || DEFAULTS.backendUrl;
  try {
    const parsed = new URL(backendUrl);
    if (!["http:", "https:"].includes(parsed.protocol)) throw new Error("not http(s)");
  } catch (_) {
    $("result").textContent = "The service URL must be an http(s) address.";
    return;
  }
  await chrome.storage.local.set({ backendUrl, apiKey: $("apiKey").value.trim() });
  $("result").textContent = "Saved.";
}

async function test() {
  await save();
  const answer = await chrome.runtime.sendMessage({ type: "misguard:check", texts: ["misguard connection test"] });
  $("result").textContent = answer && !answer.error ? "Connected: the service answered." : `Not connected: ${answer ? answer.error : "no answer"}`;
}

$("save").addEventListener("click", save);
$("test").addEventListener("click", test);
load();
