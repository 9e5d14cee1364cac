// The console's only script, loaded by every page (script-src 'self': no inline script anywhere).
// Pages work without it; it adds what needs a script: the copy buttons.

/** A field's value (a key shown once), or a block's text (a code snippet: a <pre> or <code>). */
function textOf(source) {
  return source instanceof HTMLInputElement || source instanceof HTMLTextAreaElement ? source.value : source.textContent;
}

/** Selects what would be copied, so that the keyboard can copy it when the script cannot. */
function selectAll(source) {
  if (source instanceof HTMLInputElement || source instanceof HTMLTextAreaElement) {
    source.select();
    return;
  }
  const range = document.createRange();
  range.selectNodeContents(source);
  const selection = window.getSelection();
  selection.removeAllRanges();
  selection.addRange(range);
}

/** Copies the value or text of the element a `button[data-copy]` names; the button stays hidden when no copy is possible. */
function setUpCopyButtons() {
  for (const button of document.querySelectorAll('button[data-copy]')) {
    const source = document.getElementById(button.dataset.copy);
    const status = document.getElementById(button.dataset.copyStatus);
    if (!source) continue;
    button.hidden = false;
    button.addEventListener('click', async () => {
      const say = (text) => {
        if (status) status.textContent = text;
      };
      try {
        if (navigator.clipboard && window.isSecureContext) {
          await navigator.clipboard.writeText(textOf(source));
        } else {
          // Plain http on a non-loopback host has no Clipboard API: the legacy command still copies a selection.
          selectAll(source);
          if (!document.execCommand('copy')) throw new Error('copy refused');
        }
        say('Copied to the clipboard.');
      } catch {
        selectAll(source);
        say('Could not copy: the text is selected, copy it with your keyboard.');
      }
    });
  }
}

// Loaded with `defer`: the document is parsed by now.
setUpCopyButtons();
